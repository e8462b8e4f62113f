#include <gtest/gtest.h>

#include "bundle/unpack.hh"

namespace mesh::bundle {
namespace {

Entry entry(const std::string& path, Entry::Type type, mode_t mode, const std::string& content = "",
            const std::string& target = "") {
  Entry e;
  e.path = path;
  e.type = type;
  e.mode = mode;
  if (type == Entry::Type::File) {
    e.size = content.size();
    e.content = Digest::ofBytes(content);
  }
  e.target = target;
  return e;
}

Manifest sample() {
  Manifest m;
  m.entries = {
      entry("bin", Entry::Type::Directory, 0755),
      entry("bin/tool", Entry::Type::File, 0755, "hello"),
      entry("etc", Entry::Type::Directory, 01777),
      entry("etc/empty", Entry::Type::File, 0600, ""),
      entry("etc/link", Entry::Type::Symlink, 0, "", "../bin/tool"),
  };
  return m;
}

TEST(Manifest, CountsFilesAndBytes) {
  EXPECT_EQ(sample().files(), 2u);
  EXPECT_EQ(sample().bytes(), 5u);
  EXPECT_EQ(Manifest{}.files(), 0u);
}

TEST(Manifest, RoundTrip) {
  auto m = sample();
  auto text = m.str();
  auto back = Manifest::parse(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->entries, m.entries);
  EXPECT_EQ(back->str(), text);  // deterministic
  EXPECT_EQ(text.find('\n'), std::string::npos);
  auto empty = Manifest::parse(Manifest{}.str());
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->entries.empty());
}

TEST(Manifest, ParseRefusesGarbage) {
  EXPECT_FALSE(Manifest::parse("garbage"));
  EXPECT_FALSE(Manifest::parse(""));
  EXPECT_FALSE(Manifest::parse("[]"));
  EXPECT_FALSE(Manifest::parse("{}"));
  EXPECT_FALSE(Manifest::parse(R"({"version":2,"entries":[]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":{}})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[1]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[{"path":"a","type":"dir"}]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[{"path":"a","type":"fifo","mode":1}]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[{"path":"a","type":"dir","mode":-1}]})"));
  EXPECT_FALSE(
      Manifest::parse(R"({"version":1,"entries":[{"path":"a","type":"dir","mode":65535}]})"));
  EXPECT_FALSE(
      Manifest::parse(R"({"version":1,"entries":[{"path":"../a","type":"dir","mode":493}]})"));
  EXPECT_FALSE(
      Manifest::parse(R"({"version":1,"entries":[{"path":"/a","type":"dir","mode":493}]})"));
  EXPECT_FALSE(
      Manifest::parse(R"({"version":1,"entries":[{"path":"./a","type":"dir","mode":493}]})"));
  EXPECT_FALSE(Manifest::parse(
      R"({"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":1,"digest":"md5:x"}]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[{"path":"l","type":"link"}]})"));
  EXPECT_FALSE(Manifest::parse(R"({"version":1,"entries":[{"path":"a","type":"dir","mode":493},)"
                               R"({"path":"a","type":"dir","mode":493}]})"));
  auto text = sample().str();
  EXPECT_FALSE(Manifest::parse(text.substr(0, text.size() / 2)));
}

TEST(Manifest, ParseSortsEntries) {
  auto m = Manifest::parse(R"({"version":1,"entries":[{"path":"b","type":"dir","mode":493},)"
                           R"({"path":"a","type":"link","target":"b"}]})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].path, "a");
  EXPECT_EQ(m->entries[1].path, "b");
}

}  // namespace
}  // namespace mesh::bundle
