// Packaging: `cpack -G DEB` makes a .deb that lists every file, marks every file
// under /etc a conffile, depends on the shared libraries the binaries use, passes
// lintian without an error (and with no warning the operating guide does not
// explain), installs into a throwaway root (its maintainer scripts leave the host's
// systemd alone there) and runs; `--help` and the man page name every command.
// Its life under a real systemd: package_lifecycle_test.cc.
#include <sys/stat.h>

#include <regex>
#include <set>

#include "package_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

const char* const kCommands[] = {"apply",    "plan", "status", "history", "generations",
                                 "rollback", "gc",   "pause",  "resume",  "run"};

class Package : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skipWhy() = packagingUnavailable();
    if (!skipWhy().empty()) return;
    std::string why;
    deb() = debOf(MESH_VERSION, &why);
    ASSERT_FALSE(deb().empty()) << why;
    dir() = fs::path(deb()).parent_path();
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
  for (const char* path :
       {"./usr/bin/mesh-host", "./usr/bin/mesh-host-supervise",
        "./usr/lib/mesh-host/mesh-host-http.so", "./usr/lib/systemd/system/mesh-host.service",
        "./usr/share/man/man1/mesh-host.1.gz", "./usr/share/man/man8/mesh-host-supervise.8.gz",
        "./usr/share/doc/mesh-host/copyright", "./usr/share/doc/mesh-host/changelog.gz",
        "./etc/mesh-host/", "./etc/default/mesh-host"})
    EXPECT_NE(r.out.find(std::string(path) + "\n"), std::string::npos) << path << "\n" << r.out;
  EXPECT_EQ(r.out.find("/usr/local/"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("test"), std::string::npos) << "tests packaged: " << r.out;
}

// dpkg keeps an operator's edits of a conffile across upgrades: every file the
// package puts under /etc must be one, and /etc/default/mesh-host, which the unit
// reads, is shipped (commented defaults only: the agent runs the same without it).
TEST_F(Package, MarksEveryFileUnderEtcAConffile) {
  Result contents = runCommand({"dpkg-deb", "--contents", deb()});
  ASSERT_EQ(contents.code, 0) << contents.err;
  std::set<std::string> underEtc;
  std::istringstream lines(contents.out);
  for (std::string line; std::getline(lines, line);) {
    // -rw-r--r-- root/root  1234 2026-11-30 12:00 ./etc/default/mesh-host
    const auto at = line.find(" ./etc/");
    if (at != std::string::npos && line[0] == '-') underEtc.insert(line.substr(at + 2));
  }
  EXPECT_EQ(underEtc, std::set<std::string>{"/etc/default/mesh-host"}) << contents.out;

  const std::string control = dir() + "/control-conffiles";
  ASSERT_EQ(runCommand({"dpkg-deb", "--control", deb(), control}).code, 0);
  EXPECT_EQ(slurp(control + "/conffiles"), "/etc/default/mesh-host\n");

  const std::string extracted = dir() + "/extracted";
  ASSERT_EQ(runCommand({"dpkg-deb", "-x", deb(), extracted}).code, 0);
  const std::string defaults = slurp(extracted + "/etc/default/mesh-host");
  ASSERT_FALSE(defaults.empty());
  std::istringstream text(defaults);
  for (std::string line; std::getline(text, line);)
    EXPECT_TRUE(line.empty() || line[0] == '#') << "not a comment: " << line;
  EXPECT_NE(defaults.find("#MESH_HOST_ARGS="), std::string::npos) << defaults;
}

// lintian, Debian's package checker: no error, and every warning it gives is one
// docs/operating.md names and explains ("Lintian" in "Installing").
TEST_F(Package, LintianFindsNoErrorAndOnlyExplainedWarnings) {
  if (!have("lintian"))
    GTEST_SKIP() << "lintian is not installed (scripts/install-deps installs it)";
  Result r = runCommand({"lintian", "--no-cfg", "--fail-on", "error", deb()});
  EXPECT_EQ(r.code, 0) << "lintian failed:\n" << r.out << r.err;
  const std::string guide = slurp(MESH_OPERATING_DOC);
  ASSERT_FALSE(guide.empty()) << MESH_OPERATING_DOC;
  const std::regex hint(R"(^([EW]): mesh-host[^:]*: (\S+))");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, hint)) continue;
    EXPECT_NE(m[1], "E") << line;
    EXPECT_NE(guide.find("`" + m[2].str() + "`"), std::string::npos)
        << "lintian warns " << m[2] << " and docs/operating.md does not explain it: " << line;
  }
}

TEST_F(Package, DependsOnTheLibrariesItLinks) {
  Result r = runCommand({"dpkg-deb", "--field", deb(), "Depends"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* lib : {"libsqlite3-0", "libarchive13", "libcurl4", "libsodium23", "libsystemd0",
                          "libfmt9", "libc6", "libstdc++6"})
    EXPECT_NE(r.out.find(lib), std::string::npos) << lib << " missing from " << r.out;
}

// Every shared library a packaged ELF file needs directly (its DT_NEEDED entries,
// resolved by ldd, each library's package from dpkg -S) is in Depends: the module's
// libraries too (mesh-host-http needs cpp-httplib), not only the agent's. What those
// libraries need in turn comes with their own packages' Depends.
TEST_F(Package, DependsOnThePackageOfEveryNeededLibrary) {
  const std::string depends = runCommand({"dpkg-deb", "--field", deb(), "Depends"}).out;
  const std::string tree = dir() + "/linked";
  ASSERT_EQ(runCommand({"dpkg-deb", "-x", deb(), tree}).code, 0);
  std::set<std::string> packages;
  size_t elfs = 0;
  for (const auto& e : fs::recursive_directory_iterator(tree)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    if (slurp(e.path().string()).substr(0, 4) !=
        "\x7f"
        "ELF")
      continue;
    ++elfs;
    const Result ldd = runCommand({"ldd", e.path().string()});
    ASSERT_EQ(ldd.code, 0) << e.path() << ": " << ldd.err;
    const Result dyn = runCommand({"readelf", "-d", e.path().string()});
    ASSERT_EQ(dyn.code, 0) << e.path() << ": " << dyn.err;
    std::istringstream needed(dyn.out);
    static const std::regex neededLine(R"(\(NEEDED\).*\[(.+)\])");
    for (std::string line; std::getline(needed, line);) {
      std::smatch n;
      if (!std::regex_search(line, n, neededLine)) continue;
      const std::string soname = n[1].str();
      if (soname.starts_with("ld-linux")) continue;
      const auto at = ldd.out.find(soname + " => /");
      ASSERT_NE(at, std::string::npos) << e.path() << " needs " << soname << ":\n" << ldd.out;
      const auto from = ldd.out.find('/', at);
      const std::string path = ldd.out.substr(from, ldd.out.find(' ', from) - from);
      Result owner = runCommand({"dpkg", "-S", path});
      if (owner.code != 0) owner = runCommand({"dpkg", "-S", fs::canonical(path).string()});
      ASSERT_EQ(owner.code, 0) << "no package owns " << path << " (" << e.path() << ")";
      packages.insert(owner.out.substr(0, owner.out.find_first_of(":,")));
    }
  }
  EXPECT_GE(elfs, 3u) << "mesh-host, mesh-host-supervise and the HTTP module";
  EXPECT_TRUE(packages.count("libtomlplusplus3")) << "the agent needs toml++";
  EXPECT_TRUE(packages.count("libcpp-httplib0.11")) << "the HTTP module needs cpp-httplib";
  for (const auto& p : packages) {
    bool named = false;
    for (size_t at = depends.find(p); at != std::string::npos; at = depends.find(p, at + 1)) {
      const bool starts = at == 0 || depends.compare(at - 2, 2, ", ") == 0;
      const size_t end = at + p.size();
      const bool ends = end == depends.size() || depends[end] == ' ' || depends[end] == ',';
      named = named || (starts && ends);
    }
    EXPECT_TRUE(named) << p << " (needed) missing from Depends: " << depends;
  }
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
  for (const char* path :
       {"/usr/bin/mesh-host", "/usr/bin/mesh-host-supervise",
        "/usr/lib/systemd/system/mesh-host.service", "/usr/share/man/man1/mesh-host.1.gz",
        "/etc/mesh-host", "/etc/default/mesh-host"})
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
