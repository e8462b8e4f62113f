// `process` on its own (kinds/process.cc): observe and decide on a real temp tree
// (the bundle under <state-dir>/bundles) and a recording supervisor
// (tests/support/recording_supervisor.hh), through the fixture that stands in for
// the cycle (kind_fixture.hh). The applier installs the unit and the bundle; the
// start or restart it asks for (Outcome::activation) is the cycle's to make, last.
#include <unistd.h>

#include "kind_fixture.hh"
#include "util/digest.hh"

namespace mesh::apply::test {
namespace {

class ProcessKind : public KindTest {
 protected:
  void SetUp() override {
    KindTest::SetUp();
    services = &world;
    v1 = publishTar({{"bin/app", "#!/bin/sh\necho v1\n"}, {"share/app.conf", "a = 1\n"}});
    v2 = publishTar({{"bin/app", "#!/bin/sh\necho v2\n"}, {"share/app.conf", "a = 1\n"}});
  }
  const decl::Resource& app(const std::string& bundle) {
    return declare("[module.web.process.app]\nbundle = \"" + bundle +
                   "\"\nunit = { ExecStart = \"{bundle}/bin/app serve\", Restart = \"always\" "
                   "}\n");
  }
  // Applied, and started as the cycle would start it: the record kept.
  state::Record running(const decl::Resource& r) {
    const Outcome o = converge(r);
    EXPECT_EQ(o.activation, Activation::Start);
    mesh::test::RecordingSupervisor(world).start(o.service);
    return recordOf(r, o);
  }
  std::string bundleDir(const std::string& bundle) const {
    return "/var/lib/mesh-host/bundles/" + Digest::parse(bundle)->hex();
  }
  const mesh::test::ServiceWorld::Service& service() { return world.services["web.service"]; }

  mesh::test::ServiceWorld world;
  std::string v1, v2;
};

TEST_F(ProcessKind, AbsentIsInstalledAndLeftToTheCycleToStart) {
  const auto& r = app(v1);
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "2 file(s), running as web.service");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(o.activation, Activation::Start);
  EXPECT_EQ(o.service, "web.service");
  EXPECT_TRUE(service().installed);
  EXPECT_NE(service().text.find(root + bundleDir(v1) + "/bin/app serve"), std::string::npos)
      << service().text;
  EXPECT_FALSE(service().active);  // not started here
  EXPECT_EQ(read(bundleDir(v1) + "/bin/app"), "#!/bin/sh\necho v1\n");
}

TEST_F(ProcessKind, AsRecordedAndRunningIsUnchangedAndNothingIsCalledOrWritten) {
  const auto& r = app(v1);
  const auto rec = running(r);
  const auto calls = world.calls;
  const auto started = service().startTick;
  const auto before = tree();
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(o.activation, Activation::None);
  EXPECT_EQ(world.calls, calls);  // no install, no restart
  EXPECT_EQ(service().startTick, started);
  EXPECT_EQ(tree(), before);
}

TEST_F(ProcessKind, RunningAsWantedWithNoRecordIsAdoptedAndNotRestarted) {
  const auto& r = app(v1);
  running(r);
  const auto calls = world.calls;
  const auto before = tree();
  const Outcome o = converge(r);  // the store lost
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(o.activation, Activation::None);
  EXPECT_EQ(world.calls, calls);
  EXPECT_EQ(tree(), before);
}

TEST_F(ProcessKind, AnEditedUnitIsUpdatedForDriftAndRestarted) {
  const auto& r = app(v1);
  const auto rec = running(r);
  const std::string unit = service().text;
  world.services["web.service"].text += "Nice=10\n";
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: unit edited");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(o.activation, Activation::Restart);
  EXPECT_EQ(service().text, unit);
}

TEST_F(ProcessKind, AnEditedBundleFileIsUpdatedForDriftAndRestarted) {
  const auto& r = app(v1);
  const auto rec = running(r);
  write(bundleDir(v1) + "/share/app.conf", "a = 2\n");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason().rfind("drift: bundle ", 0), 0u) << o.reason();
  EXPECT_EQ(o.activation, Activation::Restart);
  EXPECT_EQ(read(bundleDir(v1) + "/share/app.conf"), "a = 1\n");
}

TEST_F(ProcessKind, AStoppedServiceIsUpdatedAndStarted) {
  const auto& r = app(v1);
  const auto rec = running(r);
  world.services["web.service"].active = false;
  const auto calls = world.calls;
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: not running");
  EXPECT_EQ(o.detail(), "started web.service");
  EXPECT_EQ(o.activation, Activation::Start);
  EXPECT_EQ(world.calls, calls);  // nothing reinstalled
}

TEST_F(ProcessKind, ANewBundleDeclaredIsUpdatedAsDeclaredAndRestarted) {
  const auto rec = running(app(v1));
  const auto& next = app(v2);
  const Outcome o = converge(next, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.held(), wantOf(next));
  EXPECT_EQ(o.activation, Activation::Restart);
  EXPECT_EQ(read(bundleDir(v2) + "/bin/app"), "#!/bin/sh\necho v2\n");
  EXPECT_NE(service().text.find(root + bundleDir(v2)), std::string::npos) << service().text;
}

TEST_F(ProcessKind, ARestartOnCauseRestartsItAndIsNamedInTheReason) {
  const auto& r = app(v1);
  const auto rec = running(r);
  const auto calls = world.calls;
  causes.changed = {"web.config"};
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "restart-on web.config");
  EXPECT_EQ(o.detail(), "restarted web.service");
  EXPECT_EQ(o.activation, Activation::Restart);
  EXPECT_EQ(world.calls, calls);  // the unit as it was: not reinstalled
}

TEST_F(ProcessKind, PlanDecidesTheSameAndCallsAndWritesNothing) {
  Outcome o = converge(app(v1), nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.activation, Activation::Start);
  EXPECT_NE(o.diff.find("+ExecStart="), std::string::npos) << o.diff;
  EXPECT_EQ(world.calls, 0);
  EXPECT_FALSE(service().installed);
  EXPECT_FALSE(stampOf(bundleDir(v1)));

  const auto rec = running(app(v1));
  const auto calls = world.calls;
  const std::string unit = service().text;
  const auto before = tree();
  o = converge(app(v2), &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.detail(), "would restart web.service");
  EXPECT_EQ(o.held(), wantOf(app(v2)));
  EXPECT_EQ(world.calls, calls);
  EXPECT_EQ(service().text, unit);
  EXPECT_EQ(tree(), before);
}

TEST_F(ProcessKind, AMissingBundleFailsAndLeavesTheServiceAsItWas) {
  const auto rec = running(app(v1));
  const auto calls = world.calls;
  const std::string unit = service().text;
  const auto started = service().startTick;
  const auto before = tree();
  const std::string absent = Digest::ofBytes("never published").str();
  const Outcome o = converge(app(absent), &rec);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_TRUE(o.held().is(rec.wrote)) << o.reason();
  EXPECT_EQ(o.activation, Activation::None);
  EXPECT_EQ(world.calls, calls);
  EXPECT_EQ(service().text, unit);
  EXPECT_EQ(service().startTick, started);
  EXPECT_TRUE(service().active);
  EXPECT_EQ(tree(), before);
}

}  // namespace
}  // namespace mesh::apply::test
