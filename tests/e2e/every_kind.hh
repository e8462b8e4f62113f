// A declaration with one resource of every kind issue 2 covers, shared by the
// idempotence, drift, state-lost and plan tests.
#pragma once

#include <fmt/format.h>

#include <fstream>

#include "harness.hh"

namespace mesh::e2e {

inline constexpr const char* kSecret = "s3cr3t-credential-value-42";

class EveryKind : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    archive = makeArchive({{"bin/tool", "#!/bin/sh\necho tool\n"}, {"etc/conf", "a = 1\n"}},
                          "chmod 755 bin/tool && tar -cf out bin etc");
    bundle = publish(archive);
    secretFile = work + "/secret.txt";
    std::ofstream(secretFile) << kSecret;
    declPath = declare(text());
  }

  std::string text(const std::string& config = "listen = 1\n") const {
    return fmt::format(R"(
[module.m.directory.etc]
path = "/etc/m"
mode = "0750"

[module.m.file.config]
path = "/etc/m/config"
content = """{}"""

[module.m.credential.key]
path = "/etc/m/key"
from = "{}"

[module.m.link.current]
path = "/opt/m/current"
target = "/opt/m/app"

[module.m.archive.app]
path = "/opt/m/app"
bundle = "{}"
)",
                       config, secretFile, bundle);
  }

  static constexpr const char* kIds[] = {"m.etc", "m.config", "m.key", "m.current", "m.app"};

  std::string archive, bundle, secretFile, declPath;
};

}  // namespace mesh::e2e
