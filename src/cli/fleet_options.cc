#include "cli/fleet_options.hh"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fleet/etcd/members.hh"
#include "trust/key_file.hh"
#include "trust/signing.hh"
#include "util/error.hh"

namespace mesh::cli {

CLI::Option* addEtcdOption(CLI::App& cmd, std::vector<std::string>& etcd, const std::string& what) {
  return cmd
      .add_option("--etcd", etcd,
                  what +
                      ": the client URL of an etcd member (http://host:2379), or of each member "
                      "of a cluster, comma-separated or with --etcd repeated; a node uses one "
                      "member and moves to another when it fails")
      ->option_text("URL[,URL...]")
      ->allow_extra_args(false);
}

std::string etcdEndpoints(const std::vector<std::string>& etcd) {
  std::string given, joined;
  for (const auto& one : etcd) given += (given.empty() ? "" : ",") + one;
  try {
    for (const auto& url : fleet::etcd::Members::parse(given))
      joined += (joined.empty() ? "" : ",") + url;
  } catch (const InputError& e) {
    throw InputError("--etcd: {}", e.what());
  }
  return joined;
}

void EtcdConnectionOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--etcd-cacert", cacert,
                 "TLS: the CA certificate (PEM) that signed etcd's server certificate (default: "
                 "the system's CAs); needs an https:// endpoint")
      ->option_text("FILE");
  cmd.add_option("--etcd-cert", cert,
                 "TLS: the client certificate (PEM) for an etcd that asks for one "
                 "(--client-cert-auth); with --etcd-key")
      ->option_text("FILE");
  cmd.add_option("--etcd-key", key, "TLS: the client certificate's private key (PEM)")
      ->option_text("FILE");
  cmd.add_option("--etcd-user", user,
                 "etcd auth: the user to authenticate as; the password comes from "
                 "--etcd-password-file")
      ->option_text("NAME");
  cmd.add_option("--etcd-password-file", passwordFile,
                 "etcd auth: a file holding the user's password (one line; mode 0600, owned by "
                 "root or you)")
      ->option_text("FILE");
}

namespace {

void mustBeReadable(const std::string& path, const char* option) {
  if (::access(path.c_str(), R_OK) != 0)
    throw InputError("{} {}: cannot read it ({}); give a PEM file", option, path,
                     std::strerror(errno));
}

}  // namespace

fleet::EtcdConfig EtcdConnectionOptions::config(const std::string& endpoints) const {
  fleet::EtcdConfig c;
  c.endpoint = endpoints;
  const bool tls = !cacert.empty() || !cert.empty() || !key.empty();
  if (tls)
    for (const auto& url : fleet::etcd::Members::parse(endpoints))
      if (!url.starts_with("https://"))
        throw InputError(
            "--etcd {}: --etcd-cacert, --etcd-cert and --etcd-key are for TLS; use an https:// "
            "endpoint",
            url);
  if (cert.empty() != key.empty())
    throw InputError("--etcd-cert and --etcd-key go together: give both, or neither");
  if (!cacert.empty()) mustBeReadable(cacert, "--etcd-cacert");
  if (!cert.empty()) mustBeReadable(cert, "--etcd-cert");
  if (!key.empty()) mustBeReadable(key, "--etcd-key");
  c.caCert = cacert;
  c.clientCert = cert;
  c.clientKey = key;
  if (user.empty() != passwordFile.empty())
    throw InputError(
        "--etcd-user and --etcd-password-file go together: give both, or neither (a password "
        "is never given on the command line)");
  if (!user.empty()) {
    std::optional<std::string> text;
    try {
      text = trust::readKeyFile(passwordFile, trust::KeyFileKind::Private);
    } catch (const SysError& e) {
      throw InputError("--etcd-password-file {}: {}", passwordFile, e.what());
    } catch (const InputError& e) {
      throw InputError("--etcd-password-file: {}", e.what());
    }
    if (!text) throw InputError("--etcd-password-file {}: no such file", passwordFile);
    // One line: a trailing newline (echo pass > file) is not part of the password.
    if (!text->empty() && text->back() == '\n') text->pop_back();
    if (!text->empty() && text->back() == '\r') text->pop_back();
    if (text->empty()) throw InputError("--etcd-password-file {}: it is empty", passwordFile);
    c.user = user;
    c.password = std::make_shared<const Secret>(std::move(*text));
  }
  return c;
}

void FleetTrustOptions::addTo(CLI::App& cmd) {
  cmd.add_option(
         "--trust", trust,
         "an operator key whose enrollments are accepted (mesh-op:… or a file holding "
         "one); repeatable; fleet status needs at least one, fleet push --wait adds its --key, "
         "fleet history marks the records it signed verified")
      ->option_text("KEY");
}

std::vector<trust::OperatorPublicKey> FleetTrustOptions::load() const {
  if (trust.empty())
    throw InputError(
        "--trust: give the operator key that enrolls nodes (mesh-op:…, as mesh-host key show "
        "--operator FILE prints it, or a file holding it): without it a forged node status "
        "cannot be told from a real one");
  std::vector<trust::OperatorPublicKey> keys;
  for (const auto& value : trust) {
    std::string text = value;
    if (!trust::trimSpace(value).starts_with("mesh-op:")) {
      std::optional<std::string> file;
      try {
        file = trust::readKeyFile(value, trust::KeyFileKind::Public);
      } catch (const SysError& e) {
        throw InputError("--trust {}: {}", value, e.what());
      }
      if (!file)
        throw InputError("--trust {}: neither a key (mesh-op:<base64>) nor an existing file",
                         value);
      text = *file;
    }
    keys.push_back(trust::OperatorPublicKey::parse(text, "--trust " + value));
  }
  return keys;
}

}  // namespace mesh::cli
