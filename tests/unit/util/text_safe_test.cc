#include "util/text_safe.hh"

#include <gtest/gtest.h>

#include <string>

namespace mesh {
namespace {

using nlohmann::json;

TEST(TextSafe, ShownTextEscapesEveryControlAndInvalidByte) {
  EXPECT_EQ(shownText("web-1"), "web-1");
  EXPECT_EQ(shownText("a\rb\nc\td\x1b[2Je"), "a\\rb\\nc\\td\\e[2Je");
  EXPECT_EQ(shownText(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(shownText("del\x7f"), "del\\x7f");
  EXPECT_EQ(shownText("evil\xff"), "evil\\xff");
  EXPECT_EQ(shownText("\xc3"), "\\xc3");                    // cut short
  EXPECT_EQ(shownText("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(shownText("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(shownText("csi\xc2\x9b"
                      "2J"),
            "csi\\xc2\\x9b2J");  // C1 CSI
  EXPECT_EQ(shownText("r\xe2\x80\xaegnp.exe"), "r\\u{202e}gnp.exe");
  EXPECT_EQ(shownText("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\xb3"),
            "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\xb3");
  EXPECT_EQ(shownText("back\\slash"), "back\\slash");
}

TEST(TextSafe, ShownLinesKeepsLineBreaksAndTabsOnly) {
  EXPECT_EQ(shownLines("one\n\ttwo\r\x1b]0;x\x07\xfe\n"), "one\n\ttwo\\r\\e]0;x\\x07\\xfe\n");
}

TEST(TextSafe, NothingShownHoldsARawByteATerminalObeys) {
  std::string every;
  for (int c = 0; c < 256; ++c) every += static_cast<char>(c);
  for (const auto& s : {shownText(every), shownLines(every)})
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      EXPECT_TRUE((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') << i;
    }
}

TEST(TextSafe, JsonWritersReplaceInvalidUtf8AndNeverThrow) {
  const json j = {{"node", "evil\xff"}, {"reason", "x\xc3"}};
  EXPECT_THROW((void)j.dump(), json::type_error);  // what every writer did before
  EXPECT_EQ(jsonData(j), "{\"node\":\"evil\xef\xbf\xbd\",\"reason\":\"x\xef\xbf\xbd\"}");
  EXPECT_EQ(json::parse(jsonOut(j))["node"], "evil\xef\xbf\xbd");
  EXPECT_EQ(validUtf8("evil\xff"), "evil\xef\xbf\xbd");
  EXPECT_EQ(validUtf8("ok \xc3\xa9"), "ok \xc3\xa9");
  nlohmann::ordered_json o = {{"msg", "\xfe"}};
  EXPECT_EQ(jsonData(o), "{\"msg\":\"\xef\xbf\xbd\"}");
}

TEST(TextSafe, JsonOutEscapesDelAndC1SoNoRawControlIsPrinted) {
  const json j = {{"s", "a\x1b\x7f\xc2\x9b\xc2\xa0"}};
  const std::string text = jsonOut(j);
  EXPECT_EQ(text, "{\"s\":\"a\\u001b\\u007f\\u009b\xc2\xa0\"}");
  EXPECT_EQ(json::parse(text), j);
  EXPECT_EQ(jsonString("q\"\x7f"), "\"q\\\"\\u007f\"");
}

}  // namespace
}  // namespace mesh
