// The `user` and `group` kinds end to end: the real binary, Debian's real
// useradd/usermod/userdel/groupadd with --root, in a temp root that holds its
// own etc/passwd, group, shadow and gshadow. This machine's accounts are never
// touched (and a test checks so).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Accounts : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "useradd --root needs root";
    fs::create_directories(at("/etc"));
    write("/etc/passwd",
          "root:x:0:0:root:/root:/bin/bash\n"
          "legacy:x:1500:1500::/home/legacy:/bin/bash\n");
    write("/etc/group", "root:x:0:\nlegacy:x:1500:\nadm:x:4:\n");
    write("/etc/shadow", "root:*:19000:0:99999:7:::\nlegacy:*:19000:0:99999:7:::\n");
    write("/etc/gshadow", "root:*::\nlegacy:!::\nadm:*::\n");
    ::chmod(at("/etc/shadow").c_str(), 0640);
    ::chmod(at("/etc/gshadow").c_str(), 0640);
    hostPasswd = slurp("/etc/passwd");
    hostGroup = slurp("/etc/group");
  }
  void TearDown() override {
    if (!hostPasswd.empty()) {
      EXPECT_EQ(slurp("/etc/passwd"), hostPasswd) << "the host's /etc/passwd was written";
      EXPECT_EQ(slurp("/etc/group"), hostGroup) << "the host's /etc/group was written";
    }
    Node::TearDown();
  }

  // The line of `name` in <root>/etc/<file>, "" when there is none.
  std::string line(const std::string& file, const std::string& name) const {
    std::string text = read("/etc/" + file);
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      std::string l = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (l.starts_with(name + ":")) return l;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return {};
  }

  // apply under strace: how many account tools it ran.
  int toolsRun(const std::string& decl) {
    const std::string trace = work + "/strace.out";
    Result r =
        runCommand({"strace", "-f", "-qq", "-e", "trace=execve", "-o", trace, MESH_HOST_BIN,
                    "apply", decl, "--json", "--root", root, "--blobs", blobs, "--node", "test"});
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string text = slurp(trace);
    int n = 0;
    for (const char* tool : {"useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel"})
      for (size_t at = 0; (at = text.find("execve(\"/usr/sbin/" + std::string(tool) + "\"", at)) !=
                          std::string::npos;
           ++at)
        ++n;
    return n;
  }

  std::string hostPasswd, hostGroup;
};

const std::string kApp = R"(
[module.app.group.data]
name = "appdata"

[module.app.user.app]
name = "app"
groups = ["appdata"]

[module.app.file.config]
path = "/etc/app/config"
content = "x = 1\n"
owner = "app"
group = "app"
mode = "0640"
)";

TEST_F(Accounts, CreatesUserAndGroupThenAFileTheyOwn) {
  const std::string decl = declare(kApp);
  Result p = plan(decl);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find("would create user app"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("would create group appdata"), std::string::npos) << p.out;
  EXPECT_EQ(line("passwd", "app"), "") << "a plan created the user";

  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  EXPECT_EQ(outcomeOf(j, "app.app")["outcome"], "created") << j.dump();
  EXPECT_EQ(outcomeOf(j, "app.data")["outcome"], "created") << j.dump();
  EXPECT_EQ(outcomeOf(j, "app.config")["outcome"], "created") << j.dump();
  const std::string pw = line("passwd", "app");
  ASSERT_NE(pw, "");
  EXPECT_TRUE(pw.ends_with(":/nonexistent:/usr/sbin/nologin")) << pw;
  EXPECT_FALSE(fs::exists(at("/nonexistent")));
  EXPECT_NE(line("group", "appdata").find(":app"), std::string::npos) << line("group", "appdata");
  EXPECT_TRUE(line("shadow", "app").starts_with("app:!"))
      << "no password: " << line("shadow", "app");

  const uid_t uid = static_cast<uid_t>(std::stoul(pw.substr(pw.find(':', 4) + 1)));
  const std::string gr = line("group", "app");
  const gid_t gid = static_cast<gid_t>(std::stoul(gr.substr(gr.find(':', 4) + 1)));
  struct stat st {};
  ASSERT_EQ(::lstat(at("/etc/app/config").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_gid, gid);
  EXPECT_NE(uid, 0u);
}

TEST_F(Accounts, AsDeclaredRunsNoTool) {
  const std::string decl = declare(kApp);
  ASSERT_EQ(toolsRun(decl), 2);  // groupadd appdata, useradd app
  const std::string passwd = read("/etc/passwd");
  ASSERT_EQ(toolsRun(decl), 0);
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* id : {"app.app", "app.data", "app.config"})
    EXPECT_EQ(outcomeOf(r.json(), id)["outcome"], "unchanged") << id;
  EXPECT_EQ(read("/etc/passwd"), passwd);
}

TEST_F(Accounts, DriftIsRepaired) {
  const std::string decl = declare(kApp);
  ASSERT_EQ(apply(decl).code, 0);
  ASSERT_EQ(runCommand({"usermod", "--root", root, "-s", "/bin/bash", "-G", "adm", "app"}).code, 0);
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.err;
  auto o = outcomeOf(r.json(), "app.app");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "drift: groups adm, want appdata, shell /bin/bash, want /usr/sbin/nologin")
      << o.dump();
  EXPECT_TRUE(line("passwd", "app").ends_with(":/usr/sbin/nologin"));
  EXPECT_EQ(line("group", "adm"), "adm:x:4:");
  EXPECT_TRUE(line("group", "appdata").ends_with(":app"));
  EXPECT_EQ(outcomeOf(apply(decl).json(), "app.app")["outcome"], "unchanged");
}

TEST_F(Accounts, UndeclaredRemovesOnlyWhatItCreatedAndNeverFiles) {
  const std::string decl = declare(kApp +
                                   "\n[module.app.user.legacy]\nname = \"legacy\"\n"
                                   "shell = \"/bin/bash\"\ngroup = \"legacy\"\n");
  Result first = apply(decl);
  ASSERT_EQ(first.code, 0) << first.err;
  auto adopted = outcomeOf(first.json(), "app.legacy");
  EXPECT_EQ(adopted["outcome"], "unchanged") << adopted.dump();
  EXPECT_EQ(adopted["reason"], "adopted") << adopted.dump();

  Result r = apply(declare("empty = true\n"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  auto user = outcomeOf(j, "app.app");
  EXPECT_EQ(user["outcome"], "removed") << user.dump();
  EXPECT_NE(user["detail"].get<std::string>().find("its home and files are left in place"),
            std::string::npos)
      << user.dump();
  EXPECT_EQ(outcomeOf(j, "app.data")["outcome"], "removed") << j.dump();
  auto kept = outcomeOf(j, "app.legacy");
  EXPECT_EQ(kept["outcome"], "released") << kept.dump();
  EXPECT_EQ(line("passwd", "app"), "");
  EXPECT_EQ(line("group", "appdata"), "");
  EXPECT_EQ(line("passwd", "legacy"), "legacy:x:1500:1500::/home/legacy:/bin/bash");
}

// A group that is a removed user's primary group goes after the user, in the same cycle:
// groupdel refuses a group some user still has as primary. The group's id sorts before the
// user's, so an order by id alone would try the group first.
TEST_F(Accounts, AUserAndItsPrimaryGroupUndeclaredTogetherGoInOneCycle) {
  const std::string decl = declare(R"(
[module.app.group.aaa]
name = "webgrp"

[module.app.user.web]
name = "web"
group = "webgrp"
)");
  ASSERT_EQ(apply(decl).code, 0);
  ASSERT_NE(line("group", "webgrp"), "");
  Result r = apply(declare("empty = true\n"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  EXPECT_EQ(outcomeOf(j, "app.web")["outcome"], "removed") << j.dump();
  EXPECT_EQ(outcomeOf(j, "app.aaa")["outcome"], "removed") << j.dump();
  EXPECT_EQ(line("passwd", "web"), "");
  EXPECT_EQ(line("group", "webgrp"), "");
}

TEST_F(Accounts, APreExistingAccountIsAdoptedAndRepairedButKept) {
  const std::string decl =
      declare("[module.m.user.legacy]\nname = \"legacy\"\ngroup = \"legacy\"\n");
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.err;
  auto o = outcomeOf(r.json(), "m.legacy");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "adopted") << o.dump();
  EXPECT_EQ(line("passwd", "legacy"), "legacy:x:1500:1500::/home/legacy:/usr/sbin/nologin");
  Result gone = apply(declare("empty = true\n"));
  ASSERT_EQ(gone.code, 0) << gone.err;
  EXPECT_EQ(outcomeOf(gone.json(), "m.legacy")["outcome"], "released");
  EXPECT_NE(line("passwd", "legacy"), "");
}

TEST_F(Accounts, AnOwnerNeitherHereNorDeclaredIsBadInput) {
  const std::string decl =
      declare("[module.m.file.f]\npath = \"/f\"\ncontent = \"\"\nowner = \"ghost-user\"\n");
  Result r = mesh({"apply", decl});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("decl.toml:4:9: error: no user 'ghost-user' on this node"),
            std::string::npos)
      << r.err;
  // Resolved in the root's etc/passwd, not the host's: root's "daemon" is not here.
  Result d = mesh({"apply", declare("[module.m.file.f]\npath = \"/f\"\ncontent = \"\"\n"
                                    "owner = \"daemon\"\n")});
  EXPECT_EQ(d.code, 2) << d.err;
  EXPECT_NE(d.err.find("no user 'daemon' on this node"), std::string::npos) << d.err;
}

TEST_F(Accounts, BadKeysAreBadInput) {
  Result r = mesh({"apply", declare("[module.m.user.a]\nname = \"a\"\nuid = -3\nshel = \"x\"\n")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("decl.toml:3:7: error: uid -3 in user m.a is out of range"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("decl.toml:4:1: error:"), std::string::npos) << r.err;
  EXPECT_EQ(line("passwd", "a"), "");
}

// The real "/" path, and a process run as a user of the same declaration by the
// built-in supervisor: in a private mount namespace whose /etc is a copy of the
// host's (useradd renames over /etc/passwd, so the whole directory is bound, not
// the files) and whose /run is a tmpfs; the state dir is the test's own.
TEST_F(Accounts, AProcessRunsAsAUserOfTheSameDeclaration) {
  ASSERT_EQ(::chmod(work.c_str(), 0755), 0);  // the service user reaches its bundle
  fs::create_directories(work + "/out");
  ASSERT_EQ(::chmod((work + "/out").c_str(), 01777), 0);
  const std::string bundle = publish(
      makeArchive({{"bin/app", "#!/bin/sh\nid -un > " + work + "/out/whoami\nexec sleep 1000\n"}},
                  "chmod 755 bin/app && tar cf out bin"));
  const std::string decl = declare(
      "[module.svc.user.runner]\nname = \"mesh-e2e-svc\"\n"
      "[module.svc.process.app]\nbundle = \"" +
      bundle +
      "\"\nunit = { ExecStart = \"{bundle}/bin/app\", User = "
      "\"mesh-e2e-svc\" }\n");
  const std::string none = declare("empty = true\n", "none.toml");
  const std::string mesh = std::string(MESH_HOST_BIN) + " apply --root / --state-dir " + work +
                           "/state --blobs " + blobs + " --supervisor builtin --node test ";
  const std::string script =
      "set -e; mount --make-rprivate /; cp -a /etc " + work + "/etc; mount --bind " + work +
      "/etc /etc; mount -t tmpfs tmpfs /run; " + mesh + decl + "; for i in $(seq 100); do [ -s " +
      work + "/out/whoami ] && break; sleep 0.05; done; " + "echo who=$(cat " + work +
      "/out/whoami); grep -c '^mesh-e2e-svc:' /etc/passwd; " + mesh + none +
      "; echo left=$(grep -c '^mesh-e2e-svc:' /etc/passwd || true)";
  Result r = runCommand({"unshare", "-m", "sh", "-c", script});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("created svc.runner (svc): created user mesh-e2e-svc"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("created svc.app (svc)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("who=mesh-e2e-svc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("removed svc.runner (svc): deleted user mesh-e2e-svc"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("left=0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mesh::e2e
