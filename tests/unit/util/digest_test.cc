#include "util/digest.hh"

#include <gtest/gtest.h>

namespace mesh {

TEST(Digest, KnownVectors) {
  EXPECT_EQ(Digest::ofBytes("").str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Digest::ofBytes("abc").str(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Digest, ParseRoundTrip) {
  auto d = Digest::ofBytes("x");
  auto p = Digest::parse(d.str());
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, d);
}

TEST(Digest, ParseRejectsMalformed) {
  EXPECT_FALSE(Digest::parse(""));
  EXPECT_FALSE(Digest::parse("sha256:"));
  EXPECT_FALSE(Digest::parse("md5:" + std::string(64, 'a')));
  EXPECT_FALSE(Digest::parse("sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(Digest::parse("sha256:" + std::string(65, 'a')));
  EXPECT_FALSE(Digest::parse("sha256:" + std::string(64, 'A')));  // lowercase only
  EXPECT_FALSE(Digest::parse("sha256:" + std::string(63, 'a') + "g"));
  // Each neighbour of the hex ranges, and a byte past ASCII, anywhere in the 64.
  for (char bad : {'/', ':', '`', 'g', '\xe9', '\0'})
    for (size_t at : {size_t{0}, size_t{31}, size_t{63}}) {
      std::string hex(64, '0');
      hex[at] = bad;
      EXPECT_FALSE(Digest::parse("sha256:" + hex)) << int(bad) << " at " << at;
    }
  EXPECT_TRUE(
      Digest::parse("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
}

TEST(Digest, NoneIsEmpty) {
  EXPECT_TRUE(Digest::none().empty());
  EXPECT_EQ(Digest::none().str(), "");
}

TEST(WantBuilder, FieldsAreLengthPrefixed) {
  auto a = WantBuilder("t/1").add("k", "ab").add("v", "c").finish();
  auto b = WantBuilder("t/1").add("k", "a").add("v", "bc").finish();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, WantBuilder("t/1").add("k", "ab").add("v", "c").finish());
  EXPECT_NE(a, WantBuilder("t/2").add("k", "ab").add("v", "c").finish());
}

}  // namespace mesh
