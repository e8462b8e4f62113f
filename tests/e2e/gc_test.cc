// gc: bundles and blobs that none of the last K generations names are removed
// (with --dry-run, only listed); what the kept ones need stays, so rollback to
// them still works.
#include <filesystem>

#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Gc : public ProcessNode {
 protected:
  void SetUp() override {
    ProcessNode::SetUp();
    if (IsSkipped()) return;
    // Blobs live in the state dir, where gc collects them.
    const std::string local = stateDir() + "/blobs";
    fs::create_directories(local + "/sha256");
    for (const auto& e : fs::directory_iterator(blobs + "/sha256"))
      fs::copy_file(e.path(), local + "/sha256/" + e.path().filename().string());
    blobs = local;
    b1 = bundle;
    b2 = svcBundle("2");
    b3 = svcBundle("3");
    a1 = publish(makeArchive({{"a", "archive one"}}, "tar -cf out a"));
    a2 = publish(makeArchive({{"a", "archive two"}}, "tar -cf out a"));
    f3 = publish(makeArchive({{"f", "file blob"}}, "cp f out"));
    stray = publish(makeArchive({{"s", "never declared"}}, "cp s out"));
  }

  std::string svcBundle(const std::string& tag) {
    return publish(makeArchive({{"bin/svc", "#!/bin/sh\n# build " + tag + "\nexec sleep 100000\n"}},
                               "chmod 755 bin/svc && tar -cf out bin"));
  }

  // One generation: the fixture's process on `processBundle`, an archive, maybe a file blob.
  std::string generation(const std::string& processBundle, const std::string& archive,
                         const std::string& fileBlob = "") {
    bundle = processBundle;
    std::string t = text() + fmt::format(
                                 "\n[module.{}.archive.app]\npath = \"/opt/app\"\n"
                                 "bundle = \"{}\"\n",
                                 module, archive);
    if (!fileBlob.empty())
      t += fmt::format("\n[module.{}.file.data]\npath = \"/etc/data\"\nblob = \"{}\"\n", module,
                       fileBlob);
    return declare(t, "gen-" + processBundle.substr(7, 8) + ".toml");
  }

  static std::string hex(const std::string& digest) { return digest.substr(7); }
  bool hasBundle(const std::string& d) { return fs::exists(stateDir() + "/bundles/" + hex(d)); }
  bool hasBlob(const std::string& d) { return fs::exists(blobs + "/sha256/" + hex(d)); }

  std::string b1, b2, b3, a1, a2, f3, stray;
};

TEST_P(Gc, KeepsWhatTheLastGenerationsNeed) {
  ASSERT_EQ(apply(generation(b1, a1)).code, 0);
  ASSERT_EQ(apply(generation(b2, a2)).code, 0);
  Result third = apply(generation(b3, a2, f3));
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  for (const auto& d : {b1, b2, b3}) ASSERT_TRUE(hasBundle(d)) << d;

  Result dry = mesh({"gc", "--keep", "2", "--dry-run"});
  ASSERT_EQ(dry.code, 0) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("would remove bundle " + stateDir() + "/bundles/" + hex(b1)),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("would remove blob " + blobs + "/sha256/" + hex(stray)), std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("gc: would remove 4 item(s)"), std::string::npos) << dry.out;
  EXPECT_TRUE(hasBundle(b1));
  EXPECT_TRUE(hasBlob(stray));

  Result gc = mesh({"gc", "--keep", "2", "--json"});
  ASSERT_EQ(gc.code, 0) << gc.out << gc.err;
  const auto j = gc.json();
  EXPECT_EQ(j["removed"].size(), 4u) << gc.out;
  EXPECT_GT(j["bytes_freed"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["kept_generations"], nlohmann::json({3, 2}));
  EXPECT_FALSE(hasBundle(b1));
  EXPECT_FALSE(hasBlob(b1));
  EXPECT_FALSE(hasBlob(a1));
  EXPECT_FALSE(hasBlob(stray));
  for (const auto& d : {b2, b3}) EXPECT_TRUE(hasBundle(d)) << d;
  for (const auto& d : {b2, b3, a2, f3}) EXPECT_TRUE(hasBlob(d)) << d;

  // Generation 2 was kept, so rolling back to it works.
  Result back = mesh({"rollback", "2"});
  EXPECT_EQ(back.code, 0) << back.out << back.err;
  // Now 2 is current and the most recently applied: --keep 1 keeps only it.
  Result one = mesh({"gc", "--keep", "1"});
  ASSERT_EQ(one.code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("kept generations: 2"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("bytes"), std::string::npos) << one.out;
  EXPECT_FALSE(hasBundle(b3));
  EXPECT_FALSE(hasBlob(f3));
  EXPECT_TRUE(hasBundle(b2));
  EXPECT_TRUE(hasBlob(a2));
  EXPECT_EQ(apply(generation(b2, a2)).code, 0);  // the node still converges
}

TEST_P(Gc, NothingToCollect) {
  ASSERT_EQ(apply(generation(b1, a1)).code, 0);
  fs::remove(blobs + "/sha256/" + hex(stray));
  for (const auto& d : {b2, b3, a2, f3}) fs::remove(blobs + "/sha256/" + hex(d));
  Result r = mesh({"gc", "--keep", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gc: removed 0 item(s), freed 0 bytes; kept generations: 1"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(hasBundle(b1));
  EXPECT_TRUE(hasBlob(a1));
}

INSTANTIATE_TEST_SUITE_P(Backends, Gc, ::testing::Values("builtin"));

}  // namespace
}  // namespace mesh::e2e
