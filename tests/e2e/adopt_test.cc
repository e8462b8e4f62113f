// Adopt and give back: what mesh-host first overwrites is kept (root-only,
// under <state-dir>/originals) and put back when the resource leaves the
// declaration, unless it says on-remove = "keep" or "delete". Real files in a
// temp root, the real binary.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Adopt : public Node {
 protected:
  struct stat statOf(const std::string& declared) const {
    struct stat st {};
    EXPECT_EQ(::lstat(at(declared).c_str(), &st), 0) << declared;
    return st;
  }
  // An /etc-like file that was there before mesh-host: content, mode 0640,
  // owner 1234:2345.
  void distroFile(const std::string& declared, const std::string& content) {
    fs::create_directories(fs::path(at(declared)).parent_path());
    write(declared, content);
    ASSERT_EQ(::chmod(at(declared).c_str(), 0640), 0);
    ASSERT_EQ(::chown(at(declared).c_str(), 1234, 2345), 0);
  }
  static std::string fileDecl(const std::string& extra = "") {
    return "[module.ssh.file.config]\npath = \"/etc/ssh/sshd_config\"\ncontent = \"mesh\\n\"\n"
           "mode = \"0600\"\n" +
           extra;
  }
  // Another resource, so that dropping the one under test leaves a declaration.
  static std::string other() {
    return "[module.other.file.x]\npath = \"/etc/other\"\ncontent = \"x\"\n";
  }
};

TEST_F(Adopt, AnUndeclaredFileGetsItsOriginalContentModeAndOwnerBack) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  Result a = apply(declare(fileDecl() + other()));
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_EQ(outcomeOf(a.json(), "ssh.config")["outcome"], "updated");
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "mesh\n");

  // Kept root-only: the directory 0700, every file in it 0600.
  const std::string kept = stateDir() + "/originals";
  ASSERT_TRUE(fs::is_directory(kept));
  EXPECT_EQ(fs::status(kept).permissions() & fs::perms::all, fs::perms::owner_all);
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kept)) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(e.status().permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << e.path();
  }
  EXPECT_EQ(files, 2u);  // the content and the entry

  // `history ID` says what was kept, and what becomes of it.
  Result h = mesh({"history", "ssh.config"});
  EXPECT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("kept: a file of 19 bytes, mode 0640, owner 1234:2345 at "
                       "/etc/ssh/sshd_config, what was there before mesh-host first wrote "
                       "(on-remove = \"restore\": put back when undeclared)"),
            std::string::npos)
      << h.out;
  Result hj = mesh({"history", "ssh.config", "--json"});
  EXPECT_EQ(hj.json()["kept"]["path"], "/etc/ssh/sshd_config") << hj.out;
  EXPECT_EQ(hj.json()["kept"]["on_remove"], "restore") << hj.out;

  // Planned first: it says it would restore, and changes nothing.
  const std::string without = declare(other(), "without.toml");
  Result p = plan(without, true);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  auto po = outcomeOf(p.json(), "ssh.config");
  EXPECT_EQ(po["outcome"], "removed") << po.dump();
  EXPECT_EQ(po["reason"], "would restore what was there before mesh-host");
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "mesh\n");
  EXPECT_NE(plan(without).out.find("would restore ssh.config (ssh): a file of 19 bytes, mode "
                                   "0640, owner 1234:2345"),
            std::string::npos);

  Result r = apply(without);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "ssh.config");
  EXPECT_EQ(o["outcome"], "removed") << o.dump();
  EXPECT_EQ(o["reason"], "restored what was there before mesh-host");
  EXPECT_NE(o["detail"].get<std::string>().find("a file of 19 bytes, mode 0640, owner 1234:2345"),
            std::string::npos)
      << o.dump();
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
  const auto st = statOf("/etc/ssh/sshd_config");
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 2345u);

  // Given back once: the next cycles leave it alone, and forget the entry.
  for (int i = 0; i < 2; ++i) {
    Result again = apply(without);
    ASSERT_EQ(again.code, 0) << again.out << again.err;
    EXPECT_EQ(again.json()["summary"]["removed"], 0) << again.out;
  }
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
  EXPECT_TRUE(fs::is_empty(kept + "/ids"));
}

// What was at a path goes back there, never to another: a resource that moves
// gives the original back at its old path; at its new path it created from
// nothing, so undeclared, that goes and the old path stays as given back.
TEST_F(Adopt, AMovedFileGivesTheOriginalBackAtItsOldPath) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  ASSERT_EQ(apply(declare(fileDecl() + other())).code, 0);
  std::string moved = fileDecl() + other();
  moved.replace(moved.find("/etc/ssh/sshd_config"), 20, "/etc/ssh/sshd_config.d/mesh.conf");
  Result m = apply(declare(moved, "moved.toml"));
  ASSERT_EQ(m.code, 0) << m.out << m.err;
  EXPECT_NE(outcomeOf(m.json(), "ssh.config")["detail"].get<std::string>().find(
                "old path given back what was there before mesh-host: a file of 19 bytes"),
            std::string::npos)
      << m.out;
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
  EXPECT_EQ(statOf("/etc/ssh/sshd_config").st_mode & 07777, 0640u);
  EXPECT_EQ(read("/etc/ssh/sshd_config.d/mesh.conf"), "mesh\n");

  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "ssh.config")["reason"], "no longer declared") << r.out;
  EXPECT_FALSE(fs::exists(at("/etc/ssh/sshd_config.d/mesh.conf")));
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
}

TEST_F(Adopt, AFileCreatedFromNothingIsDeletedAsBefore) {
  ASSERT_EQ(apply(declare(fileDecl() + other())).code, 0);
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "ssh.config");
  EXPECT_EQ(o["outcome"], "removed");
  EXPECT_EQ(o["reason"], "no longer declared");
  EXPECT_EQ(o["detail"], "deleted");
  EXPECT_FALSE(fs::exists(at("/etc/ssh/sshd_config")));
}

TEST_F(Adopt, OnRemoveKeepLeavesTheFileAsItIs) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  ASSERT_EQ(apply(declare(fileDecl("on-remove = \"keep\"\n") + other())).code, 0);
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "ssh.config");
  EXPECT_EQ(o["outcome"], "released") << o.dump();
  EXPECT_EQ(o["detail"], "left in place: on-remove = \"keep\"");
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "mesh\n");
  EXPECT_EQ(statOf("/etc/ssh/sshd_config").st_mode & 07777, 0600u);
}

TEST_F(Adopt, OnRemoveKeepAlsoHoldsForAFileCreatedFromNothing) {
  ASSERT_EQ(apply(declare(fileDecl("on-remove = \"keep\"\n") + other())).code, 0);
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "ssh.config")["outcome"], "released");
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "mesh\n");
}

TEST_F(Adopt, OnRemoveDeleteDeletesEvenWhatWasThereBefore) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  ASSERT_EQ(apply(declare(fileDecl("on-remove = \"delete\"\n") + other())).code, 0);
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "ssh.config");
  EXPECT_EQ(o["outcome"], "removed") << o.dump();
  EXPECT_EQ(o["detail"], "deleted");
  EXPECT_FALSE(fs::exists(at("/etc/ssh/sshd_config")));
}

TEST_F(Adopt, OnRemoveChangedWhileDeclaredCountsAtRemoval) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  ASSERT_EQ(apply(declare(fileDecl("on-remove = \"keep\"\n") + other())).code, 0);
  // The same resource, now without on-remove: the original is given back.
  ASSERT_EQ(apply(declare(fileDecl() + other(), "default.toml")).code, 0);
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "ssh.config")["reason"],
            "restored what was there before mesh-host");
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
}

TEST_F(Adopt, ALinkAndADirectoryModeAreGivenBack) {
  fs::create_directories(at("/etc/nginx/sites-enabled"));
  fs::create_symlink("../sites-available/default", at("/etc/nginx/sites-enabled/default"));
  fs::create_directories(at("/srv/www"));
  ASSERT_EQ(::chmod(at("/srv/www").c_str(), 0750), 0);
  ASSERT_EQ(::chown(at("/srv/www").c_str(), 33, 33), 0);
  const std::string with = declare(
      "[module.web.link.site]\npath = \"/etc/nginx/sites-enabled/default\"\n"
      "target = \"/opt/site\"\n"
      "[module.web.directory.www]\npath = \"/srv/www\"\nmode = \"0755\"\n" +
      other());
  Result a = apply(with);
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_EQ(fs::read_symlink(at("/etc/nginx/sites-enabled/default")), "/opt/site");
  EXPECT_EQ(statOf("/srv/www").st_mode & 07777, 0755u);

  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* id : {"web.site", "web.www"})
    EXPECT_EQ(outcomeOf(r.json(), id)["reason"], "restored what was there before mesh-host")
        << r.out;
  EXPECT_EQ(fs::read_symlink(at("/etc/nginx/sites-enabled/default")), "../sites-available/default");
  EXPECT_EQ(statOf("/srv/www").st_mode & 07777, 0750u);
  EXPECT_EQ(statOf("/srv/www").st_uid, 33u);
  EXPECT_EQ(statOf("/srv/www").st_gid, 33u);
}

TEST_F(Adopt, OnRemoveIsCheckedWithItsPlace) {
  Result r = apply(declare(
      "[module.a.file.x]\npath = \"/etc/x\"\ncontent = \"x\"\non-remove = \"forget\"\n"
      "[module.a.process.p]\nbundle = \"sha256:" +
      std::string(64, '0') + "\"\nunit = { ExecStart = \"/bin/true\" }\non-remove = \"keep\"\n"));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("decl.toml:4:13: error: on-remove 'forget' in file a.x is not one of "
                       "\"restore\", \"keep\", \"delete\""),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("decl.toml:8:13: error: 'on-remove' is not for process a.p"),
            std::string::npos)
      << r.err;
}

TEST_F(Adopt, GcKeepsTheOriginalsARecordNeedsAndDropsTheRest) {
  distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
  ASSERT_EQ(apply(declare(fileDecl() + other())).code, 0);
  Result gc = mesh({"gc", "--json"});
  ASSERT_EQ(gc.code, 0) << gc.out << gc.err;
  const auto first = gc.json();
  ASSERT_FALSE(first["removed"].is_null()) << gc.out;
  for (const auto& item : first["removed"])
    EXPECT_NE(item["kind"].get<std::string>(), "original") << gc.out;
  // Still given back after gc.
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n");
  // Once given back and no record needs it, gc drops the bytes.
  ASSERT_EQ(apply(declare(other(), "without.toml")).code, 0);
  gc = mesh({"gc", "--json"});
  ASSERT_EQ(gc.code, 0) << gc.out << gc.err;
  size_t originals = 0;
  const auto second = gc.json();
  for (const auto& item : second["removed"])
    if (item["kind"].get<std::string>() == "original") ++originals;
  EXPECT_EQ(originals, 1u) << gc.out;
}

// A real kill (SIGKILL from strace) at the Nth fsync, rename, unlink… of the
// apply that adopts (and, apart, of the one that gives back), for every N until
// it runs through: whatever the kill hit, the next applies end with the original
// back — content, mode and owner — given back once, and nothing more to do.
TEST_F(Adopt, AKillAtEverySyscallOfAdoptingOrGivingBackStillGivesTheOriginalBack) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  const std::string with = declare(fileDecl() + other());
  const std::string without = declare(other(), "without.toml");
  int killed = 0;
  for (const bool killGivingBack : {false, true}) {
    for (const std::string syscall :
         {"fsync", "syncfs", "rename", "renameat", "renameat2", "unlink", "unlinkat"}) {
      bool ranThrough = false;
      for (int n = 1; n <= 40 && !ranThrough; ++n) {
        const std::string at =
            fmt::format("{} {} {}", killGivingBack ? "giving back" : "adopting", syscall, n);
        fs::remove_all(root);
        fs::create_directories(root);
        distroFile("/etc/ssh/sshd_config", "PermitRootLogin no\n");
        if (killGivingBack) {
          ASSERT_EQ(apply(with).code, 0) << at;
        }
        Result k = runCommand({"strace", "-f", "-qq", "-o", "/dev/null", "-e",
                               fmt::format("inject={}:signal=KILL:when={}", syscall, n),
                               MESH_HOST_BIN, "apply", killGivingBack ? without : with, "--root",
                               root, "--blobs", blobs, "--node", "test"});
        ranThrough = k.code == 0;
        killed += !ranThrough;
        if (!killGivingBack) {
          ASSERT_EQ(apply(with).code, 0) << at;
        }
        Result back = apply(without);
        ASSERT_EQ(back.code, 0) << at << ": " << back.out << back.err;
        EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n") << at;
        const auto st = statOf("/etc/ssh/sshd_config");
        EXPECT_EQ(st.st_mode & 07777, 0640u) << at;
        EXPECT_EQ(st.st_uid, 1234u) << at;
        Result quiet = apply(without);
        ASSERT_EQ(quiet.code, 0) << at;
        EXPECT_EQ(quiet.json()["summary"]["removed"], 0) << at << ": " << quiet.out;
        EXPECT_EQ(read("/etc/ssh/sshd_config"), "PermitRootLogin no\n") << at;
      }
      EXPECT_TRUE(ranThrough) << "no apply ran through within 40 calls of " << syscall;
    }
  }
  EXPECT_GT(killed, 10);
}

}  // namespace
}  // namespace mesh::e2e
