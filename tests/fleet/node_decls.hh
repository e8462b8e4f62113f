// What the tests of real nodes (nodes_test, cluster_nodes_test) push and count: the
// declarations (a file, a file and a service restarted on it), a bundle holding a shell
// script as bin/svc, and counting lines in a log.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fleet_fixture.hh"

namespace mesh::fleet::test {

// How many times `what` occurs in `text`.
inline int64_t countOf(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// In a node's log, once per cycle: its summary line ("cycle 7: 0 created, … 0 failed in 3 ms").
inline constexpr const char* kCycleLine = " failed in ";

// serial, and /etc/app.conf holding `content`.
inline std::string fileDecl(int64_t serial, const std::string& content) {
  return fmt::format(
      "serial = {}\n\n[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"{}\"\n",
      serial, content);
}

// serial, /etc/app.conf holding `config`, and app.svc running `bundle`'s bin/svc with the
// node's root as its argument, restarted when app.config changes. `notify`: the service
// tells its supervisor it is ready (Type=notify).
inline std::string serviceDecl(int64_t serial, const std::string& config, const std::string& bundle,
                               bool notify) {
  return fmt::format(R"(serial = {0}

[module.app.file.config]
path = "/etc/app.conf"
content = "{1}"

[module.app.process.svc]
bundle = "{2}"
restart-on = ["app.config"]
unit = {{ {3}ExecStart = "{{bundle}}/bin/svc {{root}}" }}
)",
                     serial, config, bundle,
                     notify ? R"(Type = "notify", NotifyAccess = "all", )" : "");
}

// A bundle whose bin/svc is the shell script `body`, made in `work`/<name>-src, added to
// the blob directory `blobs`; its digest.
inline std::string scriptBundle(const std::string& work, const std::string& blobs,
                                const std::string& name, const std::string& body) {
  namespace fs = std::filesystem;
  const std::string src = work + "/" + name + "-src";
  fs::create_directories(src + "/bin");
  std::ofstream(src + "/bin/svc") << "#!/bin/sh\n" << body;
  fs::permissions(src + "/bin/svc", fs::perms::owner_all | fs::perms::group_read |
                                        fs::perms::group_exec | fs::perms::others_read |
                                        fs::perms::others_exec);
  Result tar = runCommand({"tar", "-C", src, "-cf", work + "/" + name + ".tar", "bin"});
  EXPECT_EQ(tar.code, 0) << tar.err;
  Result add =
      runCommand({MESH_HOST_BIN, "blob", "add", work + "/" + name + ".tar", "--to", blobs});
  EXPECT_EQ(add.code, 0) << add.out << add.err;
  std::string digest = add.out;
  while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
  return digest.substr(digest.rfind(' ') + 1);
}

}  // namespace mesh::fleet::test
