// Packaging: `cpack -G DEB` makes a .deb that lists every file, depends on the
// shared libraries the binaries use, installs into a throwaway root (its
// maintainer scripts leave the host's systemd alone there) and runs; `--help` and
// the man page name every command.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

const char* const kCommands[] = {"apply",       "plan",     "status", "history",
                                 "generations", "rollback", "gc",     "run"};

bool have(const std::string& tool) {
  return runCommand({"sh", "-c", "command -v " + tool}).code == 0;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Package : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* tool : {"cpack", "dpkg-deb", "dpkg"})
      if (!have(tool)) {
        skipWhy() = std::string(tool) + " is not installed";
        return;
      }
    char tmpl[] = "/tmp/mesh-package.XXXXXX";
    dir() = ::mkdtemp(tmpl);
    // Into a temp dir: the build tree is only read (its install script), never built.
    Result r = runCommand({"cpack", "-G", "DEB", "--config",
                           std::string(MESH_BUILD_DIR) + "/CPackConfig.cmake", "-B", dir()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const std::string arch = runCommand({"dpkg", "--print-architecture"}).out;
    deb() =
        fmt::format("{}/mesh-host_{}_{}.deb", dir(), MESH_VERSION, arch.substr(0, arch.find('\n')));
    ASSERT_TRUE(fs::exists(deb())) << "no " << deb() << " in " << r.out;
  }
  static void TearDownTestSuite() {
    if (!dir().empty() && !std::getenv("MESH_KEEP_TEST_DIRS")) fs::remove_all(dir());
  }
  void SetUp() override {
    if (!skipWhy().empty()) GTEST_SKIP() << skipWhy();
    ASSERT_FALSE(deb().empty());
  }

  static std::string& dir() {
    static std::string d;
    return d;
  }
  static std::string& deb() {
    static std::string d;
    return d;
  }
  static std::string& skipWhy() {
    static std::string s;
    return s;
  }
};

TEST_F(Package, ListsEveryFile) {
  Result r = runCommand({"dpkg-deb", "--contents", deb()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* path : {"./usr/bin/mesh-host", "./usr/bin/mesh-host-supervise",
                           "./usr/lib/systemd/system/mesh-host.service",
                           "./usr/share/man/man1/mesh-host.1", "./etc/mesh-host/"})
    EXPECT_NE(r.out.find(std::string(path) + "\n"), std::string::npos) << path << "\n" << r.out;
  EXPECT_EQ(r.out.find("/usr/local/"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("test"), std::string::npos) << "tests packaged: " << r.out;
}

TEST_F(Package, DependsOnTheLibrariesItLinks) {
  Result r = runCommand({"dpkg-deb", "--field", deb(), "Depends"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* lib : {"libsqlite3-0", "libarchive13", "libsodium23", "libsystemd0", "libfmt9",
                          "libc6", "libstdc++6"})
    EXPECT_NE(r.out.find(lib), std::string::npos) << lib << " missing from " << r.out;
}

TEST_F(Package, MaintainerScriptsNeverTouchSystemdOutsideItsRoot) {
  const std::string control = dir() + "/control";
  ASSERT_EQ(runCommand({"dpkg-deb", "--control", deb(), control}).code, 0);
  for (const char* script : {"postinst", "prerm", "postrm"}) {
    const std::string path = control + "/" + script;
    const std::string text = slurp(path);
    ASSERT_FALSE(text.empty()) << script;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u) << script;
    EXPECT_EQ(runCommand({"sh", "-n", path}).code, 0) << script;
    EXPECT_NE(text.find("DPKG_ROOT"), std::string::npos) << script;
  }
  const std::string postinst = slurp(control + "/postinst");
  EXPECT_NE(postinst.find("[ -d /run/systemd/system ]"), std::string::npos);
  EXPECT_NE(postinst.find("daemon-reload"), std::string::npos);
  EXPECT_NE(postinst.find("enable mesh-host.service"), std::string::npos);
}

TEST_F(Package, InstallsIntoAThrowawayRootAndRuns) {
  const std::string root = dir() + "/root";
  fs::create_directories(root + "/var/lib/dpkg/info");
  fs::create_directories(root + "/var/lib/dpkg/updates");
  std::ofstream(root + "/var/lib/dpkg/status").close();
  Result r =
      runCommand({"dpkg", "--root=" + root, "--log=" + dir() + "/dpkg.log", "--force-depends",
                  "--force-script-chrootless", "--force-not-root", "-i", deb()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* path : {"/usr/bin/mesh-host", "/usr/bin/mesh-host-supervise",
                           "/usr/lib/systemd/system/mesh-host.service",
                           "/usr/share/man/man1/mesh-host.1", "/etc/mesh-host"})
    EXPECT_TRUE(fs::exists(root + path)) << path;
  Result v = runCommand({root + "/usr/bin/mesh-host", "--version"});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(v.out, fmt::format("mesh-host {}\n", MESH_VERSION));
  Result st = runCommand(
      {"dpkg-query", "--admindir=" + root + "/var/lib/dpkg", "-W", "-f", "${Status}", "mesh-host"});
  EXPECT_EQ(st.out, "install ok installed") << st.err;
}

TEST_F(Package, HelpAndManPageNameEveryCommand) {
  Result help = runCommand({MESH_HOST_BIN, "--help"});
  ASSERT_EQ(help.code, 0) << help.err;
  const std::string man = slurp(MESH_MAN_PAGE);
  ASSERT_FALSE(man.empty());
  for (const char* cmd : kCommands) {
    EXPECT_NE(help.out.find(fmt::format("\n  {} ", cmd)), std::string::npos) << cmd;
    EXPECT_NE(man.find(fmt::format(".B mesh-host {}", cmd)), std::string::npos) << cmd;
    EXPECT_NE(man.find(fmt::format("\n.B {}", cmd)), std::string::npos) << cmd;
    Result sub = runCommand({MESH_HOST_BIN, cmd, "--help"});
    EXPECT_EQ(sub.code, 0) << cmd << ": " << sub.err;
  }
  // And nothing the binary offers is missing from the man page.
  std::istringstream lines(help.out.substr(help.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line))
    if (line.size() > 2 && line[2] != ' ') {
      const std::string name = line.substr(2, line.find(' ', 2) - 2);
      EXPECT_NE(man.find(".B mesh-host " + name), std::string::npos) << name;
    }
}

}  // namespace
}  // namespace mesh::e2e
