// The drift watch reaches each directory it watches the way a cycle reaches a path it
// writes: from the root's descriptor, refusing symbolic links. A link planted on the way
// (by a user who owns a directory above a managed file) must not make the root agent
// watch wherever the link points — that directory stays unwatched, left to the interval.
#include "agent/drift_watch.hh"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.hh"
#include "decl/parse.hh"

namespace mesh::agent {
namespace {

namespace fs = std::filesystem;

const std::string kDigest = "sha256:" + std::string(64, 'b');

class DriftWatchPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root + "/srv");
    fs::create_directories(elsewhere);
  }

  static decl::Declaration declare(const std::string& text) {
    decl::ParseOptions o;
    o.node = "t";
    o.baseDir = "/srv/decl";
    return decl::parseDeclaration(text, "decl.toml", o);
  }
  static void write(const std::string& path) { std::ofstream(path) << "changed\n"; }

  mesh::test::TempDir tmp{"mesh-drift-watch"};
  std::string work = tmp.path, root = work + "/root", elsewhere = work + "/elsewhere";
};

TEST_F(DriftWatchPaths, AChangeBesideAManagedFileNamesIt) {
  fs::create_directories(root + "/srv/app");
  DriftWatch w;
  w.update(declare("[module.m.file.conf]\npath = \"/srv/app/conf\"\ncontent = \"x\\n\"\n"), root);
  EXPECT_EQ(w.watched(), 1u);
  EXPECT_EQ(w.unwatched(), 0u);

  write(root + "/srv/app/conf");
  const auto drifted = w.drain();
  ASSERT_EQ(drifted.count("m.conf"), 1u);
  EXPECT_EQ(drifted.at("m.conf"), root + "/srv/app/conf");
}

TEST_F(DriftWatchPaths, ALinkPlantedOnTheWayIsNotFollowed) {
  // /srv/app is the user's; they swap it for a link to a directory of their choosing
  // that holds a `conf` directory too. The parent of the managed file is reached
  // through the link only by a walk that follows links.
  fs::create_directories(elsewhere + "/conf");
  fs::create_directory_symlink(elsewhere, root + "/srv/app");
  DriftWatch w;
  w.update(declare("[module.m.file.x]\npath = \"/srv/app/conf/x\"\ncontent = \"x\\n\"\n"), root);
  EXPECT_EQ(w.watched(), 0u);
  EXPECT_EQ(w.unwatched(), 1u);

  write(elsewhere + "/conf/x");  // where the link points: not the agent's business
  EXPECT_TRUE(w.drain().empty());
}

TEST_F(DriftWatchPaths, ALinkAsTheParentItselfIsNotFollowed) {
  fs::create_directory_symlink(elsewhere, root + "/srv/app");
  DriftWatch w;
  w.update(declare("[module.m.file.conf]\npath = \"/srv/app/conf\"\ncontent = \"x\\n\"\n"), root);
  EXPECT_EQ(w.watched(), 0u);
  EXPECT_EQ(w.unwatched(), 1u);

  write(elsewhere + "/conf");
  EXPECT_TRUE(w.drain().empty());
}

TEST_F(DriftWatchPaths, AnArchiveTreeIsWatchedWithoutItsLinks) {
  fs::create_directories(root + "/srv/app/lib");
  fs::create_directory_symlink(elsewhere, root + "/srv/app/out");
  DriftWatch w;
  w.update(declare("[module.m.archive.app]\npath = \"/srv/app\"\nbundle = \"" + kDigest + "\"\n"),
           root);
  EXPECT_EQ(w.watched(), 3u);  // /srv (the parent), /srv/app and /srv/app/lib
  EXPECT_EQ(w.unwatched(), 0u);

  write(elsewhere + "/planted");
  EXPECT_TRUE(w.drain().empty());

  write(root + "/srv/app/lib/x.so");
  const auto drifted = w.drain();
  ASSERT_EQ(drifted.count("m.app"), 1u);
  EXPECT_EQ(drifted.at("m.app"), root + "/srv/app/lib/x.so");
}

TEST_F(DriftWatchPaths, AnArchiveTreeBehindALinkIsNotWatched) {
  fs::create_directories(elsewhere + "/tree/lib");
  fs::create_directory_symlink(elsewhere, root + "/srv/app");
  DriftWatch w;
  w.update(
      declare("[module.m.archive.app]\npath = \"/srv/app/tree\"\nbundle = \"" + kDigest + "\"\n"),
      root);
  EXPECT_EQ(w.watched(), 0u);
  EXPECT_EQ(w.unwatched(), 2u);  // the tree's parent, and the tree

  write(elsewhere + "/tree/lib/planted");
  write(elsewhere + "/tree/planted");
  EXPECT_TRUE(w.drain().empty());
}

}  // namespace
}  // namespace mesh::agent
