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
  EXPECT_EQ(Digest::none().hex(), "");
  EXPECT_EQ(Digest::none().shortStr(), "-");
  EXPECT_NE(Digest::none(), Digest::ofBytes(""));
}

// Held as raw bytes, a digest renders the same text it was parsed from.
TEST(Digest, TextFormsOfTheRawBytes) {
  const std::string hex = "0123456789abcdef00ff10e0a5c35a3c0123456789abcdef0123456789abcdef";
  const auto d = Digest::parse("sha256:" + hex);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->hex(), hex);
  EXPECT_EQ(d->str(), "sha256:" + hex);
  EXPECT_EQ(d->shortStr(), "sha256:0123456789ab");
  EXPECT_EQ(d->raw()[0], 0x01);
  EXPECT_EQ(d->raw()[9], 0xff);
  EXPECT_EQ(Digest::fromRaw(d->raw()), *d);
}

// is() answers what `str() == text` answers, for every kind of near miss.
TEST(Digest, IsComparesTheTextForm) {
  const auto d = Digest::ofBytes("abc");
  const std::string text = d.str();
  EXPECT_TRUE(d.is(text));
  EXPECT_FALSE(d.is(""));
  EXPECT_FALSE(d.is(d.hex()));                          // no prefix
  EXPECT_FALSE(d.is("SHA256:" + d.hex()));              // another prefix
  EXPECT_FALSE(d.is(text.substr(0, text.size() - 1)));  // short
  EXPECT_FALSE(d.is(text + "0"));                       // long
  for (size_t at : {size_t{7}, size_t{40}, text.size() - 1}) {
    std::string other = text;
    other[at] = other[at] == '0' ? '1' : '0';
    EXPECT_FALSE(d.is(other)) << at;
  }
  EXPECT_TRUE(Digest::none().is(""));
  EXPECT_FALSE(Digest::none().is(text));
}

TEST(WantBuilder, FieldsAreLengthPrefixed) {
  auto a = WantBuilder("t/1").add("k", "ab").add("v", "c").finish();
  auto b = WantBuilder("t/1").add("k", "a").add("v", "bc").finish();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, WantBuilder("t/1").add("k", "ab").add("v", "c").finish());
  EXPECT_NE(a, WantBuilder("t/2").add("k", "ab").add("v", "c").finish());
}

// The bytes hashed are the length-prefixed fields, whatever their length: a want
// digest recorded by an earlier version must come out the same.
TEST(WantBuilder, HashesTheLengthPrefixedFields) {
  EXPECT_EQ(WantBuilder("t/1").add("k", "ab").finish(), Digest::ofBytes("6:scheme3:t/11:k2:ab"));
  // Past what fits on the stack, and across that edge.
  for (size_t n : {size_t{300}, size_t{360}, size_t{400}, size_t{5000}}) {
    const std::string big(n, 'x');
    EXPECT_EQ(WantBuilder("t/1").add("unit", big).add("k", "ab").finish(),
              Digest::ofBytes("6:scheme3:t/14:unit" + std::to_string(n) + ":" + big + "1:k2:ab"))
        << n;
  }
}

TEST(WantBuilder, DigestFieldIsItsText) {
  const auto d = Digest::ofBytes("abc");
  EXPECT_EQ(WantBuilder("t/1").add("content", d).finish(),
            WantBuilder("t/1").add("content", d.str()).finish());
  EXPECT_EQ(WantBuilder("t/1").add("content", Digest::none()).finish(),
            WantBuilder("t/1").add("content", "").finish());
}

}  // namespace mesh
