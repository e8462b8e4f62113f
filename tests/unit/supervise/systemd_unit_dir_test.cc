// The systemd backend's pure parts: the unit directory (files and enable links)
// and the reasons it gives for failures. No systemd needed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>

#include "../../support/temp_dir.hh"
#include "supervise/systemd/explain.hh"
#include "supervise/systemd/unit_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::sdbus {
namespace {

const std::string kUnit =
    "# Managed by mesh-host (demo.runtime); edits are drift and will be reverted.\n"
    "[Unit]\nDescription=mesh-host process demo.runtime\n\n"
    "[Service]\nExecStart=/bin/sleep infinity\n\n"
    "[Install]\nWantedBy=multi-user.target\n";

class UnitDirTest : public ::testing::Test {
 protected:
  mesh::test::TempDir tmp{"mesh-unitdir-test"};
  std::string dir = tmp.path;
};

TEST(EnableLinksTest, FollowTheInstallSection) {
  EXPECT_EQ(UnitDir::enableLinks("demo.service", kUnit),
            std::vector<std::string>{"multi-user.target.wants/demo.service"});
  EXPECT_EQ(
      UnitDir::enableLinks("d.service",
                           "[Service]\nWantedBy=ignored.target\n[Install]\n"
                           "# WantedBy=commented.target\n"
                           "WantedBy = a.target  b.target\nRequiredBy=c.target\n"
                           "UpheldBy=d.target\nWantedBy=a.target\nAlias=x.service\n"),
      (std::vector<std::string>{"a.target.wants/d.service", "b.target.wants/d.service",
                                "c.target.requires/d.service", "d.target.upholds/d.service"}));
  EXPECT_TRUE(UnitDir::enableLinks("d.service", "[Service]\nExecStart=/bin/true\n").empty());
}

TEST(UnitNameTest, OnlyPlainServiceNames) {
  EXPECT_NO_THROW(UnitDir::checkName("node-tools.service"));
  for (const char* bad :
       {"", ".service", "demo", "demo.socket", "../x.service", "a/b.service", ".hidden.service"})
    EXPECT_THROW(UnitDir::checkName(bad), Error) << bad;
}

TEST_F(UnitDirTest, InstallWritesTheFileAndEnablesIt) {
  UnitDir units(dir);
  EXPECT_TRUE(units.install("demo.service", kUnit));
  EXPECT_EQ(units.read("demo.service").value(), kUnit);
  EXPECT_EQ(lstatPath(dir + "/demo.service")->st_mode & 07777, 0644u);
  EXPECT_EQ(std::filesystem::read_symlink(dir + "/multi-user.target.wants/demo.service"),
            "../demo.service");
  EXPECT_TRUE(units.enabled("demo.service", kUnit));
  EXPECT_FALSE(units.install("demo.service", kUnit));  // as wanted: nothing written
}

TEST_F(UnitDirTest, InstallRepairsADisabledUnit) {
  UnitDir units(dir);
  units.install("demo.service", kUnit);
  std::filesystem::remove(dir + "/multi-user.target.wants/demo.service");
  EXPECT_FALSE(units.enabled("demo.service", kUnit));
  EXPECT_TRUE(units.install("demo.service", kUnit));
  EXPECT_TRUE(units.enabled("demo.service", kUnit));
}

TEST_F(UnitDirTest, ChangedWantedByMovesTheLink) {
  UnitDir units(dir);
  units.install("demo.service", kUnit);
  std::string other = kUnit.substr(0, kUnit.find("WantedBy=")) + "WantedBy=graphical.target\n";
  EXPECT_TRUE(units.install("demo.service", other));
  EXPECT_FALSE(lstatPath(dir + "/multi-user.target.wants/demo.service"));
  EXPECT_TRUE(lstatPath(dir + "/graphical.target.wants/demo.service"));
}

TEST_F(UnitDirTest, RemoveTakesFileAndLinksAndOnlyThose) {
  UnitDir units(dir);
  units.install("demo.service", kUnit);
  units.install("other.service", kUnit);
  EXPECT_TRUE(units.remove("demo.service"));
  EXPECT_FALSE(units.read("demo.service"));
  EXPECT_FALSE(lstatPath(dir + "/multi-user.target.wants/demo.service"));
  EXPECT_TRUE(units.read("other.service"));
  EXPECT_TRUE(lstatPath(dir + "/multi-user.target.wants/other.service"));
  EXPECT_FALSE(units.remove("demo.service"));  // nothing there: nothing changed
}

TEST(ExplainTest, JobResults) {
  EXPECT_EQ(explainJobResult("failed"), "failed");
  EXPECT_EQ(explainJobResult("dependency"), "dependency: a unit it requires failed");
  EXPECT_EQ(explainJobResult("timeout"),
            "timeout: it did not finish within its TimeoutStartSec=/TimeoutStopSec=");
  EXPECT_EQ(explainJobResult("skipped"), "skipped");
}

TEST(ExplainTest, Exits) {
  EXPECT_EQ(explainExit({"exit-code", CLD_EXITED, 1}), "Result=exit-code, exit status 1");
  EXPECT_EQ(explainExit({"exit-code", CLD_EXITED, 203}),
            "Result=exit-code, status 203/EXEC: ExecStart= could not be run; is the program "
            "there and executable?");
  EXPECT_EQ(explainExit({"signal", CLD_KILLED, 9}), "Result=signal, killed by signal 9 (Killed)");
}

}  // namespace
}  // namespace mesh::supervise::sdbus
