// Manifest::str() and parse() work without a JSON document (issue 32: memory at
// scale); these check they write and accept exactly what the document form did.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bundle/unpack.hh"
#include "util/text_safe.hh"

namespace mesh::bundle {
namespace {

using nlohmann::json;

// The document form str() had: a JSON value per entry, dumped by jsonData.
std::string documentForm(const Manifest& m) {
  json list = json::array();
  for (const auto& e : m.entries) {
    const char* type = e.type == Entry::Type::File        ? "file"
                       : e.type == Entry::Type::Directory ? "dir"
                                                          : "link";
    json j = {{"path", e.path}, {"type", type}};
    if (e.type != Entry::Type::Symlink) j["mode"] = static_cast<uint64_t>(e.mode);
    if (e.type == Entry::Type::File) {
      j["size"] = e.size;
      j["digest"] = e.content.str();
    }
    if (e.type == Entry::Type::Symlink) j["target"] = e.target;
    list.push_back(std::move(j));
  }
  return jsonData(json{{"version", 1}, {"entries", std::move(list)}});
}

Manifest oddNames() {
  Manifest m;
  auto add = [&](std::string path, Entry::Type type, std::string target = "") {
    Entry e;
    e.path = std::move(path);
    e.type = type;
    e.mode = type == Entry::Type::Symlink ? 0 : 0644;
    if (type == Entry::Type::File) {
      e.size = 3;
      e.content = Digest::ofBytes("abc");
    }
    e.target = std::move(target);
    m.entries.push_back(std::move(e));
  };
  add("a \"quoted\" name", Entry::Type::File);
  add("back\\slash", Entry::Type::File);
  add("caf\xc3\xa9", Entry::Type::Directory);
  add("caf\xc3\xa9/tab\there", Entry::Type::File);
  add("line\nbreak", Entry::Type::Symlink, "caf\xc3\xa9/\"x\"");
  add("z", Entry::Type::Symlink, "a \"quoted\" name");
  return m;
}

TEST(ManifestStream, WritesWhatTheDocumentFormWrote) {
  const Manifest m = oddNames();
  EXPECT_EQ(m.str(), documentForm(m));
  EXPECT_EQ(Manifest{}.str(), documentForm(Manifest{}));
  auto back = Manifest::parse(m.str());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->entries, m.entries);
}

TEST(ManifestStream, IgnoresUnknownKeysAndFieldsNotConsulted) {
  // Unknown keys at every level, with nested values; a directory's digest and a
  // link's mode are not read, whatever their type; the last of a repeated key counts.
  auto m = Manifest::parse(
      R"({"extra":{"a":[1,{"b":null}]},"version":1,"entries":[)"
      R"({"path":"d","type":"dir","mode":493,"digest":[1],"more":{"x":[]}},)"
      R"({"path":"l","type":"link","target":"d","mode":"text"},)"
      R"({"path":7,"path":"f","type":"file","mode":420,"size":3,)"
      R"("digest":"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}],)"
      R"("tail":true})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->entries.size(), 3u);
  EXPECT_EQ(m->entries[0].path, "d");
  EXPECT_EQ(m->entries[1].path, "f");
  EXPECT_EQ(m->entries[1].content, Digest::ofBytes("abc"));
  EXPECT_EQ(m->entries[2].target, "d");
}

TEST(ManifestStream, RefusesFieldsOfTheWrongType) {
  for (const char* text : {
           R"({"version":1,"entries":[{"path":["a"],"type":"dir","mode":493}]})",
           R"({"version":1,"entries":[{"path":"a","type":{"t":1},"mode":493}]})",
           R"({"version":1,"entries":[{"path":"a","type":"dir","mode":"493"}]})",
           R"({"version":1,"entries":[{"path":"a","type":"dir","mode":493.0}]})",
           R"({"version":1,"entries":[{"path":"a","type":"dir","mode":493,"path":1}]})",
           R"({"version":1,"entries":[{"path":"l","type":"link","target":["d"]}]})",
           R"({"version":1,"entries":[{"path":"l","type":"link","target":""}]})",
           R"({"version":1,"entries":[[{"path":"a","type":"dir","mode":493}]]})",
           R"({"version":"1","entries":[]})",
           R"({"version":[1],"entries":[]})",
           R"({"version":1,"entries":[]} trailing)",
           R"("text")",
           R"({"entries":[]})",
           R"({"version":1})",
       })
    EXPECT_FALSE(Manifest::parse(text)) << text;
}

}  // namespace
}  // namespace mesh::bundle
