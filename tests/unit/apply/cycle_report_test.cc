// What a cycle's report keeps: every outcome, or (KeepOutcomes::Changes, the text
// output of `apply`) only those that are not `unchanged`, every one still counted;
// given a sink, the sink is handed those instead.
// Real cycles, in-process, over a temp tree and a real store.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../../support/temp_dir.hh"
#include "apply/cycle.hh"
#include "decl/parse.hh"
#include "state/store.hh"

namespace mesh::apply {
namespace {

namespace fs = std::filesystem;

class CycleReportKeeps : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(stateDir()); }

  std::string stateDir() const { return work + "/root/var/lib/mesh-host"; }

  // Files a, b and c; b's content is `b`.
  static std::string declaration(const std::string& b) {
    std::string t;
    for (const auto& [name, content] :
         std::vector<std::pair<std::string, std::string>>{{"a", "A"}, {"b", b}, {"c", "C"}})
      t += fmt::format("[module.m.file.{0}]\npath = \"/srv/{0}\"\ncontent = \"{1}\"\n", name,
                       content);
    return t;
  }

  CycleReport cycle(const std::string& text, KeepOutcomes keep, OutcomeSink sink = {}) {
    decl::ParseOptions po;
    po.node = "t";
    po.baseDir = work;
    po.stateDir = "/var/lib/mesh-host";
    const auto d = decl::parseDeclaration(text, "t.toml", po);
    auto store = state::Store::open(stateDir());
    Settings s;
    s.root = work + "/root";
    s.stateDir = stateDir();
    s.node = "t";
    Context ctx(s);
    return runCycle(ctx, d, text, &store, keep, std::move(sink));
  }

  static std::vector<std::string> ids(const CycleReport& r) {
    std::vector<std::string> out;
    for (const auto& res : r.results) out.push_back(res.id);
    return out;
  }

  mesh::test::TempDir tmp{"mesh-cycle-report-test"};
  std::string work = tmp.path;
};

TEST_F(CycleReportKeeps, ChangesOnlyKeepsWhatIsNotUnchangedAndCountsEveryOutcome) {
  const auto first = cycle(declaration("B"), KeepOutcomes::Changes);
  EXPECT_EQ(ids(first), (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_EQ(first.tally.created, 3);

  const auto second = cycle(declaration("B2"), KeepOutcomes::Changes);
  ASSERT_EQ(ids(second), std::vector<std::string>{"m.b"});
  EXPECT_EQ(second.results[0].outcome.verdict(), Verdict::Updated);
  EXPECT_EQ(second.tally.updated, 1);
  EXPECT_EQ(second.tally.unchanged, 2);

  const auto noop = cycle(declaration("B2"), KeepOutcomes::Changes);
  EXPECT_TRUE(noop.results.empty());
  EXPECT_EQ(noop.tally.unchanged, 3);
}

TEST_F(CycleReportKeeps, AllKeepsEveryOutcomeInApplyOrder) {
  cycle(declaration("B"), KeepOutcomes::All);
  const auto second = cycle(declaration("B2"), KeepOutcomes::All);
  ASSERT_EQ(ids(second), (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_EQ(second.results[0].outcome.verdict(), Verdict::Unchanged);
  EXPECT_EQ(second.results[1].outcome.verdict(), Verdict::Updated);
  EXPECT_EQ(second.results[2].outcome.verdict(), Verdict::Unchanged);
  EXPECT_EQ(second.tally.unchanged, 2);
}

// Files stage their writes, recorded when the batch is in place: an outcome
// after one (unchanged, final at once) waits for it, so the sink sees apply order.
TEST_F(CycleReportKeeps, ASinkIsHandedEveryOutcomeInApplyOrderOnceRecorded) {
  std::vector<std::string> seen;
  std::vector<Verdict> verdicts;
  auto sink = [&](ResourceResult&& r) {
    seen.push_back(r.id);
    verdicts.push_back(r.outcome.verdict());
  };
  const auto first = cycle(declaration("B"), KeepOutcomes::All, sink);
  EXPECT_EQ(seen, (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_TRUE(first.results.empty());
  EXPECT_EQ(first.tally.created, 3);

  seen.clear();
  verdicts.clear();
  const auto second = cycle(declaration("B2"), KeepOutcomes::All, sink);
  EXPECT_EQ(seen, (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_EQ(verdicts,
            (std::vector<Verdict>{Verdict::Unchanged, Verdict::Updated, Verdict::Unchanged}));
  EXPECT_TRUE(second.results.empty());
  EXPECT_EQ(second.tally.updated, 1);
  EXPECT_EQ(second.tally.unchanged, 2);

  // A resource no longer declared: its removal comes last, after the declared ones.
  seen.clear();
  const auto third =
      cycle("[module.m.file.a]\npath = \"/srv/a\"\ncontent = \"A\"\n", KeepOutcomes::All, sink);
  EXPECT_EQ(seen, (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_EQ(third.tally.removed, 2);
}

// The text output of `apply` takes its lines through a sink (cli/cmd_apply.cc):
// the sink is handed what the report would keep, and the report keeps nothing
// (a first apply of 100,000 files held every outcome to print at the end).
TEST_F(CycleReportKeeps, ASinkIsHandedWhatTheReportWouldKeepAndTheReportKeepsNone) {
  std::vector<std::string> seen;
  auto sink = [&](ResourceResult&& r) { seen.push_back(r.id); };
  const auto first = cycle(declaration("B"), KeepOutcomes::Changes, sink);
  EXPECT_EQ(seen, (std::vector<std::string>{"m.a", "m.b", "m.c"}));
  EXPECT_TRUE(first.results.empty());
  EXPECT_EQ(first.tally.created, 3);

  seen.clear();
  const auto second = cycle(declaration("B2"), KeepOutcomes::Changes, sink);
  EXPECT_EQ(seen, std::vector<std::string>{"m.b"});
  EXPECT_TRUE(second.results.empty());
  EXPECT_EQ(second.tally.updated, 1);
  EXPECT_EQ(second.tally.unchanged, 2);

  seen.clear();
  const auto noop = cycle(declaration("B2"), KeepOutcomes::Changes, sink);
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(noop.results.empty());
  EXPECT_EQ(noop.tally.unchanged, 3);
}

}  // namespace
}  // namespace mesh::apply
