// Options that every command speaking to etcd shares (`run --etcd` and every `fleet`
// command): how to reach a secured etcd — TLS files, and a user whose password comes from
// a file, never from the command line (where `ps` and shell history would show it) —
// and, for what reads node statuses, the operator keys that enroll nodes.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "trust/operator_key.hh"

namespace mesh::cli {

// --etcd URL[,URL...], repeatable (etcdctl's --endpoints): the client URLs of one etcd
// cluster's members; `what` says what the command does with it.
CLI::Option* addEtcdOption(CLI::App& cmd, std::vector<std::string>& etcd, const std::string& what);
// The --etcd values as one comma-separated list, each URL checked (http:// or https://,
// no empty entry, trailing slashes dropped); throws InputError.
std::string etcdEndpoints(const std::vector<std::string>& etcd);

struct EtcdConnectionOptions {
  std::string cacert, cert, key;  // --etcd-cacert, --etcd-cert, --etcd-key (PEM files)
  std::string user;               // --etcd-user
  std::string passwordFile;       // --etcd-password-file
  void addTo(CLI::App& cmd);
  // The client's configuration for `endpoints` (etcdEndpoints()); reads the password file
  // (a key file: refused when others may read or write it). Throws InputError for options
  // that do not go together, a file that is missing, or TLS options with an http://
  // endpoint. TLS and the user apply to every member.
  fleet::EtcdConfig config(const std::string& endpoints) const;
};

// --trust KEY (repeatable): the operator keys whose enrollments `fleet status` accepts.
struct FleetTrustOptions {
  std::vector<std::string> trust;
  void addTo(CLI::App& cmd);
  // Each value a "mesh-op:…" text or a file holding one; throws InputError when none is
  // given or one is not a key.
  std::vector<trust::OperatorPublicKey> load() const;
};

}  // namespace mesh::cli
