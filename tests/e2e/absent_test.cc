// `absent`: nothing at a path — a file, a link (the link, never its target), an
// empty directory, a tree only with recursive = true — `removed` when it acts,
// `unchanged` after; what it removed comes back on a rollback to a generation
// before it, and leaving the declaration otherwise does nothing to the path.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Absent : public Node {
 protected:
  void put(const std::string& declared, const std::string& content) {
    fs::create_directories(fs::path(at(declared)).parent_path());
    write(declared, content);
  }
  static std::string absent(const std::string& path, const std::string& extra = "") {
    return fmt::format("[module.web.absent.gone]\npath = \"{}\"\n{}", path, extra);
  }
  static std::string other() {
    return "[module.other.file.x]\npath = \"/etc/other\"\ncontent = \"x\"\n";
  }
};

TEST_F(Absent, AFileIsRemovedThenUnchanged) {
  put("/etc/cron.d/stale", "* * * * * root true\n");
  const std::string d = declare(absent("/etc/cron.d/stale") + other());
  Result p = plan(d, true);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  auto po = outcomeOf(p.json(), "web.gone");
  EXPECT_EQ(po["outcome"], "removed") << po.dump();
  EXPECT_EQ(po["detail"], "a file");
  EXPECT_NE(plan(d).out.find("would remove web.gone (web): a file: declared absent"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(at("/etc/cron.d/stale")));

  Result r = apply(d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "web.gone");
  EXPECT_EQ(o["outcome"], "removed") << o.dump();
  EXPECT_EQ(o["reason"], "declared absent");
  EXPECT_EQ(o["detail"], "a file; kept");
  EXPECT_FALSE(fs::exists(at("/etc/cron.d/stale")));

  Result again = apply(d);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(outcomeOf(again.json(), "web.gone")["outcome"], "unchanged") << again.out;
  EXPECT_EQ(plan(d).code, 0);
}

TEST_F(Absent, ALinkIsRemovedAndItsTargetUntouched) {
  put("/etc/nginx/sites-available/default", "server {}\n");
  fs::create_directories(at("/etc/nginx/sites-enabled"));
  fs::create_symlink("../sites-available/default", at("/etc/nginx/sites-enabled/default"));
  Result r = apply(declare(absent("/etc/nginx/sites-enabled/default") + other()));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "web.gone")["detail"], "a symbolic link; kept");
  EXPECT_FALSE(fs::exists(fs::symlink_status(at("/etc/nginx/sites-enabled/default"))));
  EXPECT_EQ(read("/etc/nginx/sites-available/default"), "server {}\n");
}

TEST_F(Absent, ALinkOnTheWayIsNeverFollowed) {
  put("/elsewhere/victim", "keep me");
  fs::create_directories(at("/etc"));
  fs::create_symlink("/elsewhere", at("/etc/conf.d"));
  Result r = apply(declare(absent("/etc/conf.d/victim") + other()));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "web.gone")["outcome"], "failed") << r.out;
  EXPECT_EQ(read("/elsewhere/victim"), "keep me");
}

TEST_F(Absent, AnEmptyDirectoryIsRemoved) {
  fs::create_directories(at("/var/www/html"));
  Result r = apply(declare(absent("/var/www/html") + other()));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "web.gone")["detail"], "a directory; kept");
  EXPECT_FALSE(fs::exists(at("/var/www/html")));
}

TEST_F(Absent, ATreeNeedsRecursive) {
  put("/var/www/html/index.html", "hello");
  put("/var/www/html/img/logo.svg", "<svg/>");
  Result r = apply(declare(absent("/var/www/html") + other()));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "web.gone");
  EXPECT_EQ(o["outcome"], "failed");
  EXPECT_NE(o["reason"].get<std::string>().find("add recursive = true"), std::string::npos)
      << o.dump();
  EXPECT_EQ(read("/var/www/html/index.html"), "hello");

  r = apply(declare(absent("/var/www/html", "recursive = true\n") + other(), "rec.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "web.gone")["detail"], "a directory and all it held; kept");
  EXPECT_FALSE(fs::exists(at("/var/www/html")));
}

TEST_F(Absent, LeavingTheDeclarationDoesNothingToThePath) {
  put("/etc/cron.d/stale", "old");
  ASSERT_EQ(apply(declare(absent("/etc/cron.d/stale") + other())).code, 0);
  put("/etc/cron.d/stale", "new");  // someone puts one back
  Result r = apply(declare(other(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), "web.gone");
  EXPECT_EQ(o["outcome"], "released") << o.dump();
  EXPECT_EQ(read("/etc/cron.d/stale"), "new");
}

TEST_F(Absent, ARollbackPutsBackWhatItRemoved) {
  put("/var/www/html/index.html", "hello");
  put("/var/www/html/img/logo.svg", "<svg/>");
  ASSERT_EQ(::chmod(at("/var/www/html/img").c_str(), 0750), 0);
  ASSERT_EQ(::chown(at("/var/www/html/index.html").c_str(), 33, 33), 0);
  fs::create_symlink("index.html", at("/var/www/html/home.html"));
  put("/etc/cron.d/stale", "* * * * * root true\n");
  ASSERT_EQ(apply(declare(other(), "g1.toml")).code, 0);
  ASSERT_EQ(apply(declare(absent("/var/www/html", "recursive = true\n") +
                              "[module.web.absent.cron]\npath = \"/etc/cron.d/stale\"\n" + other(),
                          "g2.toml"))
                .code,
            0);
  ASSERT_FALSE(fs::exists(at("/var/www/html")));
  ASSERT_FALSE(fs::exists(at("/etc/cron.d/stale")));

  Result back = mesh({"rollback", "--json"});
  ASSERT_EQ(back.code, 0) << back.out << back.err;
  for (const char* id : {"web.gone", "web.cron"})
    EXPECT_EQ(outcomeOf(back.json(), id)["reason"], "restored what was there before mesh-host")
        << back.out;
  EXPECT_EQ(read("/etc/cron.d/stale"), "* * * * * root true\n");
  EXPECT_EQ(read("/var/www/html/index.html"), "hello");
  EXPECT_EQ(read("/var/www/html/img/logo.svg"), "<svg/>");
  EXPECT_EQ(fs::read_symlink(at("/var/www/html/home.html")), "index.html");
  struct stat st {};
  ASSERT_EQ(::stat(at("/var/www/html/img").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(::stat(at("/var/www/html/index.html").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 33u);
}

TEST_F(Absent, BadInputNamesItsPlace) {
  Result r =
      apply(declare("[module.web.absent.a]\npath = \"etc/x\"\n"
                    "[module.web.absent.b]\npath = \"/etc/y\"\nrecursiv = true\n"
                    "[module.web.absent.c]\npath = \"/etc/z\"\n"
                    "[module.web.file.in]\npath = \"/etc/z/in\"\ncontent = \"\"\n"));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("decl.toml:2:8: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decl.toml:5:1: error: unknown key 'recursiv' in absent web.b; allowed "
                       "keys: path, recursive, requires"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("file web.in at '/etc/z/in' is beneath absent web.c"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace mesh::e2e
