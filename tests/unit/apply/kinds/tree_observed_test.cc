// TreeObserved's text in the state store: what it writes reads back the same; the
// form before version 2 (fingerprints by path, the manifest as a string) is still
// read, and marked to be written again; what no version wrote reads as nothing
// (the tree is then verified by hashing, as with no record).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apply/kinds/tree.hh"

namespace mesh::apply {
namespace {

using bundle::Entry;

Fingerprint fp(uint64_t ino) {
  return *Fingerprint::parse(fmt::format("65024:{}:3:4:5:100644:0:0", ino));
}

TreeObserved sample() {
  TreeObserved o;
  o.manifest.emplace();
  auto& e = o.manifest->entries;
  e.push_back({"bin", Entry::Type::Directory, 0755, 0, {}, {}});
  e.push_back({"bin/tool", Entry::Type::File, 0755, 3, Digest::ofBytes("abc"), {}});
  e.push_back({"bin/x", Entry::Type::Symlink, 0, 0, {}, "tool"});
  e.push_back({"etc", Entry::Type::Directory, 0755, 0, {}, {}});
  e.push_back({"etc/conf", Entry::Type::File, 0644, 1, Digest::ofBytes("z"), {}});
  o.cache.fingerprints = {{1, fp(11)}, {4, fp(44)}};
  return o;
}

TEST(TreeObserved, ReadsBackWhatItWrites) {
  const auto o = sample();
  const std::string text = o.str();
  const auto back = TreeObserved::parse(text);
  ASSERT_TRUE(back.manifest);
  EXPECT_EQ(back.manifest->entries, o.manifest->entries);
  EXPECT_EQ(back.cache.fingerprints, o.cache.fingerprints);
  EXPECT_FALSE(back.legacy);
  EXPECT_EQ(back.str(), text);
  // The manifest inline, the count first: no second copy of its text when read.
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["entries"], 5);
  EXPECT_TRUE(j["manifest"].is_object());
  EXPECT_EQ(j["fingerprints"][1][0], 4);
}

TEST(TreeObserved, ReadsTheFormBeforeAndMarksItToBeWrittenAgain) {
  const auto o = sample();
  nlohmann::json before;
  before["manifest"] = o.manifest->str();
  using nlohmann::json;
  before["fingerprints"] = json::array(
      {json::array({"bin/tool", fp(11).str()}), json::array({"etc/conf", fp(44).str()}),
       json::array({"gone/since", fp(99).str()})});  // no file: dropped  // no file there: dropped
  const auto back = TreeObserved::parse(before.dump());
  ASSERT_TRUE(back.manifest);
  EXPECT_EQ(back.manifest->entries, o.manifest->entries);
  EXPECT_EQ(back.cache.fingerprints, o.cache.fingerprints);
  EXPECT_TRUE(back.legacy);
  // None at all, as an early version wrote it.
  before["fingerprints"] = nullptr;
  const auto none = TreeObserved::parse(before.dump());
  ASSERT_TRUE(none.manifest);
  EXPECT_TRUE(none.cache.fingerprints.empty());
}

TEST(TreeObserved, WhatNoVersionWroteReadsAsNothing) {
  const std::string good = sample().str();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  for (const std::string& bad : {
           with("[4,", "[5,"),                 // past the manifest
           with("[4,", "[0,"),                 // a directory's
           with("[4,", "[1,"),                 // not ascending (twice the same)
           with("[4,", "[4294967300,"),        // past 32 bits
           with("[4,\"65024", "[4,\"x65024"),  // not a fingerprint
           with("[4,", "[\"etc/conf\","),      // by path in version 2
           with("\"version\":2", "\"version\":3"),
           with("\"manifest\":{", "\"manifest\":[{"),
           std::string("[]"),
           good.substr(0, good.size() - 1),
       }) {
    const auto o = TreeObserved::parse(bad);
    EXPECT_FALSE(o.manifest) << bad;
    EXPECT_TRUE(o.cache.fingerprints.empty()) << bad;
  }
}

TEST(TreeObserved, ADamagedCountCostsNothing) {
  const std::string text = sample().str();
  std::string damaged = text;
  damaged.replace(damaged.find("\"entries\":5"), 11, "\"entries\":999999999999999");
  const auto o = TreeObserved::parse(damaged);  // no room made for a quadrillion entries
  ASSERT_TRUE(o.manifest);
  EXPECT_EQ(o.manifest->entries.size(), 5u);
  EXPECT_LT(o.manifest->entries.capacity(), 1000u);
}

}  // namespace
}  // namespace mesh::apply
