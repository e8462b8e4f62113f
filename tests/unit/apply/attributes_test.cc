#include "apply/kinds/attributes.hh"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace mesh::apply {

// The mode goes into every file's want digest: its text must stay fmt's "{:04o}".
TEST(Attributes, ModeStringIsFourOctalDigits) {
  for (mode_t m : {0, 01, 0644, 0755, 07777, 0100644, 04711, 0600})
    EXPECT_EQ(modeString(m), fmt::format("{:04o}", m & 07777)) << m;
}

TEST(Attributes, WantOfAttributesUnchanged) {
  // A file's want as every earlier version built it (mode through fmt, names as strings).
  const Attributes a{0640, decl::Principal{"www-data"}, std::nullopt};
  WantBuilder w("file/1");
  addAttributes(w, a);
  EXPECT_EQ(
      w.finish(),
      WantBuilder("file/1").add("mode", "0640").add("owner", "www-data").add("group", "").finish());
}

// holds() is true only for the text of the file's fingerprint as this program writes it
// and the same content, compared without building a value.
TEST(ContentObserved, HoldsOnlyTheRecordedTextOfTheSameFingerprint) {
  struct stat st {};
  st.st_dev = 8;
  st.st_ino = 1234;
  st.st_size = 200;
  st.st_mode = 0100644;
  st.st_mtim.tv_sec = 1700000000;
  st.st_ctim.tv_sec = 1700000001;
  const Fingerprint now = Fingerprint::of(st);
  const std::string content = Digest::ofBytes("x").str();
  const std::string text = now.str() + "|" + content;
  EXPECT_TRUE(ContentObserved::holds(text, now, content));
  EXPECT_FALSE(ContentObserved::holds(text, now, Digest::ofBytes("y").str()));
  EXPECT_FALSE(ContentObserved::holds(text, now, ""));
  struct stat moved = st;
  moved.st_ctim.tv_nsec = 1;  // written since
  EXPECT_FALSE(ContentObserved::holds(text, Fingerprint::of(moved), content));
  EXPECT_FALSE(ContentObserved::holds("|" + content, now, content));        // racy: no fingerprint
  EXPECT_FALSE(ContentObserved::holds(now.str() + content, now, content));  // no bar
  EXPECT_FALSE(ContentObserved::holds("", now, ""));
  EXPECT_FALSE(ContentObserved::holds("x:y|" + content, now, content));  // malformed
  EXPECT_FALSE(ContentObserved::holds(text + "x", now, content));        // longer
  // The same values written otherwise (a leading zero) parse to the same, but are not
  // the recorded text: the slow path (read and hash) decides, never a guess.
  EXPECT_TRUE(Fingerprint::parse("0" + now.str()) == now);
  EXPECT_FALSE(ContentObserved::holds("0" + text, now, content));
}

}  // namespace mesh::apply
