// The reload policy: a daemon-reload only after an install or uninstall, at most
// one per cycle, none in a no-op cycle — counted by the backend itself.
#include "backend_fixture.hh"
#include "util/fs.hh"

namespace mesh::testing {
namespace {

using SystemdReloadTest = SystemdBackendTest;

TEST_F(SystemdReloadTest, InstallingTwoThenStartingBothReloadsOnce) {
  auto a = service("a"), b = service("b");
  sup->install(unit(a));
  sup->install(unit(b));
  EXPECT_EQ(sup->reloadCount(), 0);  // install alone reloads nothing
  sup->start(a);
  sup->start(b);
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), 1);
  EXPECT_TRUE(observe1(a).active);
  EXPECT_TRUE(observe1(b).active);
}

TEST_F(SystemdReloadTest, NoOpCycleMakesNoReload) {
  auto a = service();
  sup->install(unit(a));
  sup->start(a);
  auto pid = observe1(a).pid;

  // The next cycle, with a new backend as a new mesh-host run would have: observe,
  // find it as wanted, re-install the same text (a no-op), flush.
  auto again = supervise::openSystemd(options());
  auto st = again->observe({a}).at(a);
  EXPECT_TRUE(st.active);
  again->install(unit(a));
  again->start(a);  // already active: no reload, no new process
  again->flush();
  EXPECT_EQ(again->reloadCount(), 0);
  EXPECT_EQ(again->observe({a}, true).at(a).pid, pid);
}

TEST_F(SystemdReloadTest, ChangedUnitTakesEffectOnRestartAfterOneReload) {
  auto a = service();
  sup->install(unit(a, {{"Environment", "MESH_V=1"}}));
  sup->start(a);
  auto reloads = sup->reloadCount();
  sup->install(unit(a, {{"Environment", "MESH_V=2"}}));
  sup->restart(a);
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), reloads + 1);
  EXPECT_EQ(ns->property(a, "Environment"), "MESH_V=2");
  EXPECT_EQ(ns->property(a, "NeedDaemonReload"), "no");
}

TEST_F(SystemdReloadTest, UnitChangedBehindOurBackIsReloadedBeforeStart) {
  // A crash between writing a unit and starting it loses the owed reload; systemd
  // must still not start the definition it loaded before.
  auto a = service();
  sup->install(unit(a, {{"Environment", "MESH_V=1"}}));
  sup->start(a);
  sup->stop(a);
  atomicWrite(ns->unitDir() + "/" + a, unit(a, {{"Environment", "MESH_V=2"}}).text, 0644);

  auto fresh = supervise::openSystemd(options());
  fresh->start(a);
  EXPECT_EQ(fresh->reloadCount(), 1);
  EXPECT_EQ(ns->property(a, "Environment"), "MESH_V=2");
}

TEST_F(SystemdReloadTest, UninstallsReloadOnceAtFlush) {
  auto a = service("a"), b = service("b");
  sup->install(unit(a));
  sup->install(unit(b));
  sup->flush();
  auto reloads = sup->reloadCount();
  EXPECT_EQ(reloads, 1);
  sup->uninstall(a);
  sup->uninstall(b);
  sup->uninstall(b);  // already gone: owes nothing more
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), reloads + 1);
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), reloads + 1);
}

}  // namespace
}  // namespace mesh::testing
