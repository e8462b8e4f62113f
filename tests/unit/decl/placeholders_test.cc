// Issue 31: {node} and {cluster} in a declaration — in a file's content, every path, a
// link's target and unit values — replaced at parse, so the model (and plan, apply, the
// compiled form) holds the text the node gets; nothing else is touched.
#include <gtest/gtest.h>

#include "decl/placeholders.hh"
#include "decl_test.hh"

namespace mesh::decl::test {
namespace {

const FileSpec& fileOf(const Declaration& d, const std::string& id) {
  for (const auto& r : d.resources)
    if (r.id == id) return std::get<FileSpec>(r.spec);
  throw std::runtime_error("no " + id);
}

const std::string kEveryPlace =
    "[module.m.file.conf]\n"
    "path = \"/etc/{cluster}/{node}.conf\"\n"
    "content = \"name = {node}\\ncluster = {cluster}\\nkept = {bundle} {root} {nodes} {Node}\\n\"\n"
    "[module.m.link.current]\n"
    "path = \"/srv/{node}/current\"\n"
    "target = \"/opt/{cluster}/{node}\"\n"
    "[module.m.process.p]\n"
    "bundle = \"" +
    kDigestA +
    "\"\n"
    "unit = { ExecStart = \"{bundle}/bin/app --node {node} --cluster {cluster}\", "
    "Environment = [\"NODE={node}\", \"ROOT={root}\"] }\n";

TEST(Placeholders, NodeAndClusterAreReplacedInEveryPlace) {
  auto o = defaultOptions();  // node "laptop"
  o.cluster = "prod";
  const auto d = parse(kEveryPlace, o);
  const auto& f = fileOf(d, "m.conf");
  EXPECT_EQ(f.path, "/etc/prod/laptop.conf");
  EXPECT_EQ(*f.content, "name = laptop\ncluster = prod\nkept = {bundle} {root} {nodes} {Node}\n");
  EXPECT_EQ(f.contentDigest, Digest::ofBytes(*f.content)) << "the digest is of the text applied";
  const auto& l = std::get<LinkSpec>(d.resources[1].spec);
  EXPECT_EQ(l.path, "/srv/laptop/current");
  EXPECT_EQ(l.target, "/opt/prod/laptop");
  const auto& p = std::get<ProcessSpec>(d.resources[2].spec);
  EXPECT_EQ(p.unit.at("ExecStart"), UnitValue{"{bundle}/bin/app --node laptop --cluster prod"});
  EXPECT_EQ(p.unit.at("Environment"), (UnitValue{"NODE=laptop", "ROOT={root}"}));
}

// Outside fleet mode the declaration may name its cluster; in fleet mode it must be the
// agent's (or the push's).
TEST(Placeholders, ADeclaredClusterIsTheDefaultAndMustMatchTheFleets) {
  const std::string text = "cluster = \"lab\"\n" + kEveryPlace;
  EXPECT_EQ(fileOf(parse(text), "m.conf").path, "/etc/lab/laptop.conf");
  auto o = defaultOptions();
  o.cluster = "lab";
  EXPECT_EQ(fileOf(parse(text, o), "m.conf").path, "/etc/lab/laptop.conf");
  o.cluster = "prod";
  const auto e = errorOf(text, o);
  EXPECT_NE(e.find("decl.toml:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("declaration is for cluster 'lab' but this is cluster 'prod'"),
            std::string::npos)
      << e;
  const auto bad = errorOf("cluster = \"a/b\"\nempty = true\n");
  EXPECT_NE(bad.find("cluster 'a/b' is not a cluster name"), std::string::npos) << bad;
}

TEST(Placeholders, ClusterWhereNoneIsKnownIsAClearError) {
  const auto e = errorOf(kEveryPlace);  // no --cluster, no cluster = …
  // Each place is named, with its position and what to do.
  EXPECT_NE(e.find("decl.toml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("path in file m.conf uses {cluster} but no cluster is known"), std::string::npos)
      << e;
  EXPECT_NE(e.find("content in file m.conf uses {cluster}"), std::string::npos) << e;
  EXPECT_NE(e.find("target in link m.current uses {cluster}"), std::string::npos) << e;
  EXPECT_NE(e.find("unit.ExecStart in process m.p uses {cluster}"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster = \"prod\""), std::string::npos) << e;
  // {node} alone needs no cluster.
  EXPECT_EQ(
      fileOf(parse("[module.m.file.conf]\npath = \"/etc/{node}\"\ncontent = \"x\"\n"), "m.conf")
          .path,
      "/etc/laptop");
}

TEST(Placeholders, NodeWhereNoneIsKnownIsAClearError) {
  auto o = defaultOptions();
  o.node = "";
  const auto e = errorOf("[module.m.file.conf]\npath = \"/etc/x\"\ncontent = \"{node}\"\n", o);
  EXPECT_NE(e.find("content in file m.conf uses {node} but no node name is known"),
            std::string::npos)
      << e;
}

// The substituted path is the one checked: a node name cannot make a path that escapes,
// and a link target must still be free of control characters.
TEST(Placeholders, TheSubstitutedTextIsWhatIsChecked) {
  auto o = defaultOptions();
  o.node = "..";
  const auto e = errorOf("[module.m.file.conf]\npath = \"/etc/{node}/x\"\ncontent = \"x\"\n", o);
  EXPECT_NE(e.find("path '/etc/../x' in file m.conf"), std::string::npos) << e;
  o.node = "a\tb";
  const auto t = errorOf("[module.m.link.l]\npath = \"/srv/l\"\ntarget = \"/opt/{node}\"\n", o);
  EXPECT_NE(t.find("once {node} and {cluster} are replaced"), std::string::npos) << t;
}

TEST(Placeholders, OnlyTheExactWordsAreReplaced) {
  const Placeholders p{"web-1", std::string("prod")};
  EXPECT_EQ(substitutePlaceholders("{node}{node} {cluster} {node {nodes} node} {{node}}", p),
            "web-1web-1 prod {node {nodes} node} {web-1}");
  EXPECT_FALSE(placeholderProblem("{cluster}", p));
  EXPECT_TRUE(placeholderProblem("{cluster}", Placeholders{"web-1", std::nullopt}));
  EXPECT_FALSE(placeholderProblem("{clusters}", Placeholders{"web-1", std::nullopt}));
}

}  // namespace
}  // namespace mesh::decl::test
