#include "agent/log.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace mesh::agent {
namespace {

constexpr int64_t kT = 1'764'505'230'042;  // 2025-11-30T12:20:30.042Z

TEST(LogLine, TextIsTheMessageAfterItsRfc3339Time) {
  EXPECT_EQ(formatLogLine(LogFormat::Text, false, Level::Info, "cycle 3: 0 created", nullptr, kT),
            "2025-11-30T12:20:30.042Z cycle 3: 0 created\n");
  EXPECT_EQ(formatLogLine(LogFormat::Text, false, Level::Error, "a\nb", nullptr, kT),
            "2025-11-30T12:20:30.042Z a\n2025-11-30T12:20:30.042Z b\n");
}

TEST(LogLine, UnderJournaldEveryLineCarriesItsPriority) {
  EXPECT_EQ(formatLogLine(LogFormat::Text, true, Level::Info, "cycle 3", nullptr, kT),
            "<6>cycle 3\n");
  EXPECT_EQ(formatLogLine(LogFormat::Text, true, Level::Error, "d.toml:1:1: a\nd.toml:2:1: b",
                          nullptr, kT),
            "<3>d.toml:1:1: a\n<3>d.toml:2:1: b\n");
  EXPECT_EQ(formatLogLine(LogFormat::Text, true, Level::Warning, "w", nullptr, kT), "<4>w\n");
  EXPECT_EQ(formatLogLine(LogFormat::Text, true, Level::Notice, "n", nullptr, kT), "<5>n\n");
}

TEST(LogLine, JsonIsOneObjectPerLineWithItsFields) {
  const std::string line =
      formatLogLine(LogFormat::Json, false, Level::Notice, "created m.x (m)\nsecond line",
                    {{"cycle", 3}, {"id", "m.x"}, {"outcome", "created"}, {"msg", "ignored"}}, kT);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2025-11-30T12:20:30.042Z");
  EXPECT_EQ(j["level"], "notice");
  EXPECT_EQ(j["msg"], "created m.x (m)\nsecond line") << "a field never overrides msg";
  EXPECT_EQ(j["cycle"], 3);
  EXPECT_EQ(j["id"], "m.x");
  EXPECT_EQ(j["outcome"], "created");
}

TEST(LogLine, JsonSurvivesInvalidUtf8) {
  const std::string line =
      formatLogLine(LogFormat::Json, false, Level::Error, "bad \xff path", nullptr, kT);
  EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << line;
}

// Issue 27: a reason or key holding CR, ESC or invalid UTF-8 is shown escaped in the text
// log and in every journald field; the JSON log replaces invalid UTF-8 and escapes the rest.
TEST(LogLine, ControlAndInvalidBytesAreEscapedInEveryFormat) {
  const std::string hostile = "failed web.app (web): boom\r\x1b[2K\xc2\x9b fake\xff";
  EXPECT_EQ(formatLogLine(LogFormat::Text, false, Level::Error, hostile, nullptr, kT),
            "2025-11-30T12:20:30.042Z failed web.app (web): boom\\r\\e[2K\\xc2\\x9b fake\\xff\n");
  const std::string json =
      formatLogLine(LogFormat::Json, false, Level::Error, hostile, {{"reason", "x\x1b\xff"}}, kT);
  EXPECT_EQ(json.find('\x1b'), std::string::npos);
  EXPECT_EQ(json.find('\r'), std::string::npos);
  EXPECT_EQ(json.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(json)["reason"], "x\x1b\xef\xbf\xbd");
  for (const auto& f : journalFields(Level::Error, hostile + "\nsecond", {{"reason", "r\x1b\xfe"}}))
    for (const char c : f) {
      const auto u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u == '\n' || (u >= 0x20 && u != 0x7f && u != 0xff && u != 0xfe && u != 0x9b))
          << f;
    }
}

TEST(JournalFields, OutcomesAreSearchableFields) {
  const auto f = journalFields(Level::Warning, "failed web.app (web): boom",
                               {{"cycle", 7},
                                {"id", "web.app"},
                                {"module", "web"},
                                {"kind", "process"},
                                {"outcome", "failed"},
                                {"reason", "boom"},
                                {"restarted", false},
                                {"trigger", nullptr}});
  const std::vector<std::string> want = {"MESSAGE=failed web.app (web): boom",
                                         "PRIORITY=4",
                                         "SYSLOG_IDENTIFIER=mesh-host",
                                         "MESH_CYCLE=7",
                                         "MESH_RESOURCE=web.app",
                                         "MESH_KIND=process",
                                         "MESH_MODULE=web",
                                         "MESH_OUTCOME=failed",
                                         "MESH_REASON=boom",
                                         "MESH_RESTARTED=false"};
  EXPECT_EQ(std::set<std::string>(f.begin(), f.end()),
            std::set<std::string>(want.begin(), want.end()));
  EXPECT_EQ(f.size(), want.size());
}

TEST(JournalStream, OnlyWhenItNamesThisStderr) {
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderrIsJournal());
  ::setenv("JOURNAL_STREAM", "1:1", 1);  // some other stream: stderr was redirected
  EXPECT_FALSE(stderrIsJournal());
  struct stat st {};
  ASSERT_EQ(::fstat(2, &st), 0);
  ::setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(),
           1);
  EXPECT_TRUE(stderrIsJournal());
  ::unsetenv("JOURNAL_STREAM");
}

}  // namespace
}  // namespace mesh::agent
