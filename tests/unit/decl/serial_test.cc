// The top-level `serial` (docs/trust.md): optional, an integer of 0 or more;
// anything else is refused with the place it was written.
#include <gtest/gtest.h>

#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::parse;

TEST(Serial, AbsentIsNullopt) {
  EXPECT_FALSE(parse("node = \"laptop\"\nempty = true\n").serial.has_value());
}

TEST(Serial, IntegerIsKept) {
  EXPECT_EQ(parse("serial = 7\nempty = true\n").serial, 7);
  EXPECT_EQ(parse("serial = 0\nempty = true\n").serial, 0);
  EXPECT_EQ(parse("serial = 9007199254740993\nempty = true\n").serial, int64_t{9007199254740993});
}

TEST(Serial, StringIsRefusedWithPlace) {
  auto msg = errorOf("node = \"laptop\"\nserial = \"7\"\n");
  EXPECT_NE(msg.find("decl.toml:2:10: error: serial is a string"), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer of 0 or more"), std::string::npos) << msg;
}

TEST(Serial, FloatIsRefused) {
  auto msg = errorOf("serial = 1.5\n");
  EXPECT_NE(msg.find("decl.toml:1:10: error: serial is"), std::string::npos) << msg;
}

TEST(Serial, NegativeIsRefused) {
  auto msg = errorOf("serial = -1\n");
  EXPECT_NE(msg.find("decl.toml:1:10: error: serial is -1"), std::string::npos) << msg;
}

TEST(Serial, InsideAModuleIsNotTheSerial) {
  auto msg = errorOf("[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\nserial = 1\n");
  EXPECT_NE(msg.find("unknown key 'serial'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mesh::decl
