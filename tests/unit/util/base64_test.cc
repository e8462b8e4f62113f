// The one base64 helper: round trips, what it refuses, and the exact-size form
// the key parsers use.
#include "util/base64.hh"

#include <gtest/gtest.h>

namespace mesh {
namespace {

TEST(Base64, RoundTripsEveryLength) {
  std::string bytes;
  for (int i = 0; i < 40; ++i) {
    const std::string text = base64Encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u) << i;
    EXPECT_EQ(base64Decode(text), bytes) << i;
    bytes.push_back(static_cast<char>(i * 37));
  }
  EXPECT_EQ(base64Encode(std::string_view("mesh")), "bWVzaA==");
}

TEST(Base64, RefusesWhatIsNotBase64UnlessToldToSkipIt) {
  EXPECT_FALSE(base64Decode("bWVz aA=="));
  EXPECT_EQ(base64Decode("bWVz aA==\n", " \n"), "mesh");
  EXPECT_FALSE(base64Decode("bWVzaA=!"));
  EXPECT_FALSE(base64Decode("bWVzaA"));  // padding is required
}

// The fast decoder for etcd's answers reads what the constant-time one reads, and
// refuses what it refuses.
TEST(Base64, ThePublicDecoderAgreesWithTheConstantTimeOne) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    const std::string text = base64Encode(bytes);
    EXPECT_EQ(base64DecodePublic(text), bytes) << i;
    bytes.push_back(static_cast<char>(i * 37 + 11));
  }
  for (const char* bad : {"bWVz aA==", "bWVzaA=!", "bWVzaA",
                          "bW=zaA==", "====", "A===", "bWVzaB==", "bWVzaGE=x", "-_-_"}) {
    EXPECT_FALSE(base64DecodePublic(bad)) << bad;
    EXPECT_FALSE(base64Decode(bad)) << bad;
  }
  EXPECT_EQ(base64DecodePublic(""), "");
}

TEST(Base64, ExactSizeOrNothing) {
  unsigned char out[4] = {};
  EXPECT_TRUE(base64Decode("bWVzaA==", out, sizeof out));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 4), "mesh");
  unsigned char small[3] = {};
  EXPECT_FALSE(base64Decode("bWVzaA==", small, sizeof small));
  unsigned char big[5] = {};
  EXPECT_FALSE(base64Decode("bWVzaA==", big, sizeof big));
}

}  // namespace
}  // namespace mesh
