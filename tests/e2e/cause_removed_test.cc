// A resource a process restarts (or reloads) on, removed: the process's input
// went away, so it restarts (reloads) once, as for a change of it — the only
// declaration that parses drops the id from `restart-on` too. The restart owed
// is durable: a crash after the removal and before its record still restarts
// once, and a crash after the intent, before the removal, too. Both backends.
#include <fmt/format.h>
#include <poll.h>

#include <filesystem>
#include <fstream>

#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class CauseRemoved : public ProcessNode {
 protected:
  // The fixture's node without its config: neither declared nor listed.
  std::string withoutConfig() const {
    std::string t = text();
    const auto from = t.find(fmt::format("[module.{}.file.config]", module));
    const auto to = t.find(fmt::format("[module.{}.process.runtime]", module));
    t.erase(from, to - from);
    const std::string list = fmt::format("restart-on = [\"{0}.key\", \"{0}.config\"]", module);
    t.replace(t.find(list), list.size(), fmt::format("restart-on = [\"{}.key\"]", module));
    return t;
  }

  struct Pid {
    int pid = 0;
    std::string since;
    bool operator==(const Pid&) const = default;
  };
  Pid running() {
    auto s = serviceStatus();
    EXPECT_TRUE(s.value("active", false)) << s.dump();
    return {s.value("pid", 0), s.value("since", std::string())};
  }
};

TEST_P(CauseRemoved, RemovingARestartOnResourceRestartsOnce) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const Pid before = running();
  const std::string decl = declare(withoutConfig(), "without.toml");

  Result p = plan(decl, true);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_EQ(outcomeOf(p.json(), id())["reason"],
            fmt::format("restart-on {}.config (removed)", module))
      << p.out;

  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  EXPECT_EQ(outcomeOf(j, module + ".config")["outcome"], "removed") << r.out;
  EXPECT_FALSE(fs::exists(at("/etc/" + module + "/config")));
  auto o = outcomeOf(j, id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["restarted"], true) << o.dump();
  EXPECT_EQ(o["reason"], fmt::format("restart-on {}.config (removed)", module)) << o.dump();
  EXPECT_NE(running(), before);
  EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], 1);

  const Pid after = running();
  Result again = apply(decl);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(outcomeOf(again.json(), id())["outcome"], "unchanged") << again.out;
  EXPECT_EQ(running(), after);
  EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], 1);
}

// A resource a process no longer lists, removed later: nothing of the process
// read it any more, so nothing restarts.
TEST_P(CauseRemoved, ACauseDroppedFromTheListEarlierRestartsNothingWhenRemoved) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  std::string unlisted = text();
  const std::string list = fmt::format("restart-on = [\"{0}.key\", \"{0}.config\"]", module);
  unlisted.replace(unlisted.find(list), list.size(),
                   fmt::format("restart-on = [\"{}.key\"]", module));
  Result r = apply(declare(unlisted, "unlisted.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), id())["outcome"], "unchanged") << r.out;
  const Pid before = running();
  r = apply(declare(withoutConfig(), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), module + ".config")["outcome"], "removed") << r.out;
  EXPECT_EQ(outcomeOf(r.json(), id())["outcome"], "unchanged") << r.out;
  EXPECT_EQ(running(), before);
}

// Killed after the removal, before its record (and the restart it owes), or after
// the intent, before the removal: the next cycle restarts once, and only once.
TEST_P(CauseRemoved, ACrashAroundTheRemovalStillRestartsOnce) {
  for (const char* point : {"before-record", "after-intent"}) {
    SCOPED_TRACE(point);
    ASSERT_EQ(apply(declare(text(), "with.toml")).code, 0);
    const Pid before = running();
    const int64_t restarts = serviceStatus()["restarts_by_mesh_host"];
    const std::string decl = declare(withoutConfig(), "without.toml");
    Result crashed = mesh({"apply", decl, "--json"}, {{"MESH_HOST_CRASH_AT", point}});
    ASSERT_NE(crashed.code, 0) << crashed.out << crashed.err;
    ASSERT_EQ(running(), before) << "the crash came before the restart";
    EXPECT_EQ(fs::exists(at("/etc/" + module + "/config")), std::string(point) == "after-intent");

    Result r = apply(decl);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    auto o = outcomeOf(r.json(), id());
    EXPECT_EQ(o["restarted"], true) << o.dump();
    EXPECT_NE(o["reason"].get<std::string>().find(module + ".config"), std::string::npos)
        << o.dump();
    EXPECT_FALSE(fs::exists(at("/etc/" + module + "/config")));
    EXPECT_NE(running(), before);
    EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], restarts + 1);
    Result again = apply(decl);
    EXPECT_EQ(outcomeOf(again.json(), id())["outcome"], "unchanged") << again.out;
    EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], restarts + 1);
  }
}

// reload-on: the config removed reloads the service in place (the pid stays).
TEST_P(CauseRemoved, RemovingAReloadOnResourceReloadsInPlace) {
  const std::string reloadBundle =
      publish(makeArchive({{"bin/svc",
                            "#!/bin/sh\n"
                            "trap 'echo reloaded >> \"$MESH_RELOADS\"' HUP\n"
                            "sleep 100000 &\n"
                            "while :; do wait $!; done\n"}},
                          "chmod 755 bin/svc && tar -cf out bin"));
  auto reloadText = [&](bool withConfig) {
    return fmt::format(R"(
[module.{0}.file.other]
path = "/etc/{0}/other"
content = "x"
{2}
[module.{0}.process.runtime]
bundle = "{1}"
restart-on = ["{0}.other"]
reload-on = [{3}]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Environment = ["MESH_RELOADS={{root}}/reloads"] }}
)",
                       module, reloadBundle,
                       withConfig
                           ? fmt::format("[module.{}.file.config]\npath = \"/etc/{}/config\"\n"
                                         "content = \"one\"\n",
                                         module, module)
                           : "",
                       withConfig ? fmt::format("\"{}.config\"", module) : "");
  };
  ASSERT_EQ(apply(declare(reloadText(true), "with.toml")).code, 0);
  const Pid before = running();
  Result r = apply(declare(reloadText(false), "without.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], fmt::format("reload-on {}.config (removed)", module)) << o.dump();
  EXPECT_EQ(o["detail"], "reloaded " + service()) << o.dump();
  EXPECT_EQ(o["restarted"], false);
  EXPECT_EQ(running(), before) << "a reload keeps the pid";
  std::string reloads;
  for (int i = 0; i < 500 && reloads.empty(); ++i) {
    std::ifstream in(at("/reloads"));
    reloads.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (reloads.empty()) ::poll(nullptr, 0, 10);
  }
  EXPECT_EQ(reloads, "reloaded\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, CauseRemoved, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mesh::e2e
