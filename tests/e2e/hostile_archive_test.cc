// Hostile bundles, made by real `tar` and `zip` (and crafted with libarchive's writer
// where those tools refuse), through the real binary: the archive resource fails with
// a reason naming the entry and why, the apply exits 1, an ordinary file in the same
// declaration still converges, and nothing is written outside the archive's path:
// neither elsewhere in the root nor in a directory outside it. The path itself does
// not appear, and a good tree already there stays byte for byte.
#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

using Snapshot = std::map<std::string, PathSnapshot>;

// One entry for craft(): what tar and zip will not write on their own.
struct Crafted {
  enum Type { File, Dir, Symlink, HardLink, CharDevice };
  Type type;
  std::string name;
  std::string data;  // File: content; Symlink/HardLink: target
};

// Writes `entries` as they are, unchecked, with libarchive (format: "pax" or "zip").
void craft(const std::string& path, const std::string& format,
           const std::vector<Crafted>& entries) {
  archive* a = archive_write_new();
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(archive_write_set_format_by_name(a, format.c_str()), ARCHIVE_OK)
      << archive_error_string(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const auto& c : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, c.name.c_str());
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (c.type) {
      case Crafted::File:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(c.data.size()));
        break;
      case Crafted::Dir:
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        break;
      case Crafted::Symlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_perm(e, 0777);
        archive_entry_set_symlink(e, c.data.c_str());
        break;
      case Crafted::HardLink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_hardlink(e, c.data.c_str());
        archive_entry_set_size(e, 0);
        break;
      case Crafted::CharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_perm(e, 0666);
        archive_entry_set_rdevmajor(e, 1);
        archive_entry_set_rdevminor(e, 3);
        break;
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << c.name << ": " << archive_error_string(a);
    if (c.type == Crafted::File) {
      ASSERT_EQ(archive_write_data(a, c.data.data(), c.data.size()),
                static_cast<la_ssize_t>(c.data.size()));
    }
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK) << archive_error_string(a);
  archive_write_free(a);
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() != fs::file_type::not_found;
}

class HostileArchive : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    // A sentinel directory outside the root, where escapes would land.
    outside = work + "/outside";
    fs::create_directories(outside);
    std::ofstream(outside + "/secret", std::ios::binary) << "outside, never to be touched\n";
    // Bystanders inside the root: the archive's parent and a neighbour of it.
    fs::create_directories(at("/opt/other"));
    write("/opt/other/keep", "a neighbour\n");
    good = publish(makeArchive({{"bin/tool", "#!/bin/sh\necho good\n"}, {"README", "good\n"}},
                               "chmod 755 bin/tool && tar -cf out bin README"));
  }

  std::string declaration(const std::string& bundle, const std::string& limits = "") {
    return declare(fmt::format(R"(
[module.m.file.ok]
path = "/etc/m/ok"
content = "converges anyway\n"

[module.m.archive.app]
path = "/opt/app"
bundle = "{}"
{}
)",
                               bundle, limits),
                   "decl-" + std::to_string(++decls) + ".toml");
  }

  Snapshot rootNow() const {
    Snapshot s = snapshotTree(root, {"var"});
    // Creating and removing entries (the unpack's temp directory beside the path, the
    // file resource's parents) changes a directory's times; which entries exist is
    // compared in full, so only those times are left out.
    for (const char* dir : {".", "opt", "etc", "etc/m"}) {
      if (auto it = s.find(dir); it != s.end()) it->second.mtimeNs = it->second.ctimeNs = 0;
    }
    return s;
  }

  // Applies `bundle` (already published, or deliberately missing) at /opt/app twice:
  // onto nothing, then in place of a good tree. Each time the archive must fail with
  // every one of `why` in its reason, and nothing else may change.
  void expectRefused(const std::string& bundle, const std::vector<std::string>& why,
                     const std::string& limits = "") {
    const std::string hostile = declaration(bundle, limits);
    const Snapshot outsideBefore = snapshotTree(outside);

    {
      SCOPED_TRACE("onto nothing");
      Snapshot before = rootNow();
      applyRefused(hostile, why, "created");
      EXPECT_FALSE(exists(at("/opt/app"))) << "the archive's path exists after the failure";
      Snapshot after = rootNow();
      for (const char* mine : {"etc", "etc/m", "etc/m/ok"})
        EXPECT_EQ(after.erase(mine), 1u) << mine;
      EXPECT_EQ(after, before);
      EXPECT_EQ(read("/etc/m/ok"), "converges anyway\n");
      EXPECT_EQ(snapshotTree(outside), outsideBefore);
    }
    {
      SCOPED_TRACE("in place of a good tree");
      Result r = apply(declaration(good));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      ASSERT_EQ(outcomeOf(r.json(), "m.app")["outcome"], "created") << r.out;
      const Snapshot before = rootNow();
      ASSERT_TRUE(before.count("opt/app/bin/tool"));
      applyRefused(hostile, why, "unchanged");
      EXPECT_EQ(rootNow(), before) << "the good tree was touched";
      EXPECT_EQ(read("/opt/app/README"), "good\n");
      EXPECT_EQ(snapshotTree(outside), outsideBefore);

      // The good tree is still known as good: going back to it touches nothing.
      r = apply(declaration(good));
      EXPECT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_EQ(outcomeOf(r.json(), "m.app")["outcome"], "unchanged") << r.out;
      EXPECT_EQ(rootNow(), before);
    }
  }

  void applyRefused(const std::string& decl, const std::vector<std::string>& why,
                    const std::string& fileOutcome) {
    Result r = apply(decl);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    auto report = r.json();
    auto app = outcomeOf(report, "m.app");
    EXPECT_EQ(app["outcome"], "failed") << app.dump();
    const std::string reason = app.value("reason", "");
    for (const auto& w : why)
      EXPECT_NE(reason.find(w), std::string::npos) << "no '" << w << "' in: " << reason;
    EXPECT_EQ(outcomeOf(report, "m.ok")["outcome"], fileOutcome) << r.out;
    EXPECT_EQ(report["summary"]["failed"], 1) << r.out;
  }

  std::string crafted(const std::string& format, const std::vector<Crafted>& entries) {
    const std::string path = work + "/crafted-" + std::to_string(++craftedCount);
    craft(path, format, entries);
    return publish(path);
  }

  std::string outside, good;
  int decls = 0, craftedCount = 0;
};

TEST_F(HostileArchive, AbsolutePathFromTarP) {
  // GNU tar keeps the leading '/' with -P; the file is gone before the apply.
  const std::string target = outside + "/planted";
  std::ofstream(target) << "planted\n";
  const std::string bundle = publish(makeArchive({}, "tar -P -cf out '" + target + "'"));
  fs::remove(target);
  expectRefused(bundle, {"entry '" + target + "'", "absolute path"});
  EXPECT_FALSE(exists(target));
}

TEST_F(HostileArchive, DotDotEntryFromTarP) {
  const std::string bundle = publish(
      makeArchive({{"escape", "evil\n"}}, "mkdir sub && cd sub && tar -P -cf ../out ../escape"));
  expectRefused(bundle, {"entry '../escape'", "'..' component"});
}

TEST_F(HostileArchive, DotDotInsideAPathCrafted) {
  expectRefused(crafted("pax", {{Crafted::Dir, "a", ""},
                                {Crafted::File, "a/../../../outside/secret", "overwritten\n"}}),
                {"entry 'a/../../../outside/secret'", "'..' component"});
}

TEST_F(HostileArchive, SymlinkEscapingFromTar) {
  const std::string bundle =
      publish(makeArchive({{"fine", "ok\n"}}, "ln -s ../../.. evil && tar -cf out fine evil"));
  expectRefused(bundle, {"entry 'evil'", "symlink target '../../..' leaves the bundle"});
}

TEST_F(HostileArchive, SymlinkToAbsolutePathFromTar) {
  const std::string bundle =
      publish(makeArchive({}, "ln -s '" + outside + "' evil && tar -cf out evil"));
  expectRefused(bundle, {"entry 'evil'", "symlink to absolute path"});
}

TEST_F(HostileArchive, FileThroughAnEscapingSymlinkFromTar) {
  // evil -> ../../outside, then evil/secret: the write would land outside the root.
  const std::string bundle =
      publish(makeArchive({{"evil2/secret", "overwritten\n"}},
                          "ln -s ../../outside evil && tar -cf out evil && "
                          "tar -rf out --transform 's,^evil2,evil,' evil2/secret"));
  expectRefused(bundle, {"entry 'evil'", "leaves the bundle"});
}

TEST_F(HostileArchive, FileThroughAnInnerSymlinkFromTar) {
  // d -> sub stays inside, but a file written through it would follow a link.
  const std::string bundle = publish(
      makeArchive({{"sub/a", "a\n"}, {"d2/x", "x\n"}},
                  "ln -s sub d && tar -cf out sub d && tar -rf out --transform 's,^d2,d,' d2/x"));
  expectRefused(bundle, {"entry 'd/x'", "'d' on its path is a symlink"});
}

TEST_F(HostileArchive, HardLinkToAbsolutePathCrafted) {
  expectRefused(crafted("pax", {{Crafted::File, "fine", "ok\n"},
                                {Crafted::HardLink, "h", outside + "/secret"}}),
                {"entry 'h'", "hard link to '" + outside + "/secret': absolute path"});
}

TEST_F(HostileArchive, HardLinkOutsideCrafted) {
  expectRefused(crafted("pax", {{Crafted::HardLink, "h", "../../outside/secret"}}),
                {"entry 'h'", "'..' component"});
}

TEST_F(HostileArchive, HardLinkToWhatTheArchiveDoesNotHoldCrafted) {
  // "etc/passwd" is not in the bundle: linking to it would reach whatever is there.
  expectRefused(crafted("pax", {{Crafted::HardLink, "h", "etc/passwd"}}),
                {"entry 'h'", "not earlier in the archive"});
}

TEST_F(HostileArchive, FifoFromTar) {
  const std::string bundle = publish(makeArchive({}, "mkfifo pipe && tar -cf out pipe"));
  expectRefused(bundle, {"entry 'pipe'", "FIFOs are not allowed"});
}

TEST_F(HostileArchive, DeviceCrafted) {
  // mknod needs root, so the device entry is crafted.
  expectRefused(crafted("pax", {{Crafted::CharDevice, "null", ""}}),
                {"entry 'null'", "character devices are not allowed"});
}

TEST_F(HostileArchive, TooManyEntries) {
  std::map<std::string, std::string> files;
  for (int i = 0; i < 20; ++i) files[fmt::format("f{:02}", i)] = "x";
  const std::string bundle = publish(makeArchive(files, "tar -cf out f*"));
  expectRefused(bundle, {"entry 'f10'", "exceeds 10 entries"}, "max-entries = 10");
}

TEST_F(HostileArchive, TooManyBytes) {
  const std::string bundle = publish(
      makeArchive({{"small", "ok\n"}, {"big", std::string(2000, 'b')}}, "tar -cf out small big"));
  expectRefused(bundle, {"entry 'big'", "more than 1000 bytes"}, "max-bytes = 1000");
}

TEST_F(HostileArchive, ZipSymlinkEscapingFromZip) {
  const std::string bundle =
      publish(makeArchive({{"fine", "ok\n"}},
                          "ln -s ../../.. evil && zip -q -y out.zip fine evil "
                          "&& mv out.zip out"));
  expectRefused(bundle, {"entry 'evil'", "leaves the bundle"});
}

TEST_F(HostileArchive, ZipDotDotCrafted) {
  expectRefused(crafted("zip", {{Crafted::File, "fine", "ok\n"},
                                {Crafted::File, "../../outside/secret", "overwritten\n"}}),
                {"entry '../../outside/secret'", "'..' component"});
}

TEST_F(HostileArchive, ZipAbsolutePathCrafted) {
  expectRefused(crafted("zip", {{Crafted::File, outside + "/planted", "planted\n"}}),
                {"entry '" + outside + "/planted'", "absolute path"});
  EXPECT_FALSE(exists(outside + "/planted"));
}

TEST_F(HostileArchive, BlobNotMatchingItsDigest) {
  const std::string bundle =
      publish(makeArchive({{"bin/tool", "#!/bin/sh\necho other\n"}}, "tar -cf out bin"));
  // Corrupt it in the blob store after publishing.
  std::ofstream(blobs + "/sha256/" + bundle.substr(7), std::ios::binary | std::ios::app) << "junk";
  expectRefused(bundle, {bundle, "corrupt"});
}

TEST_F(HostileArchive, MissingBlob) {
  const std::string bundle = "sha256:" + std::string(64, 'a');
  expectRefused(bundle, {bundle, "not found"});
}

}  // namespace
}  // namespace mesh::e2e

namespace mesh::e2e {
namespace {

// Regression: a refused bundle whose path's parents did not exist left those
// parents behind (they were created before the unpack).
TEST_F(HostileArchive, RefusedBundleLeavesNoParentDirectories) {
  const std::string bundle = publish(makeArchive({}, "mkfifo pipe && tar -cf out pipe"));
  const Snapshot before = rootNow();
  Result r = apply(declare(fmt::format("[module.m.archive.deep]\npath = \"/new/parent/app\"\n"
                                       "bundle = \"{}\"\n",
                                       bundle),
                           "deep.toml"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.deep")["outcome"], "failed");
  EXPECT_FALSE(exists(at("/new"))) << "the refused bundle left /new behind";
  EXPECT_EQ(rootNow(), before);
}

}  // namespace
}  // namespace mesh::e2e

namespace mesh::e2e {
namespace {

// A local user swapped a directory on the way to the archive's path for a link to
// another directory: the walk refuses it, naming the link, in a plan as in an
// apply; nothing is written through it — neither the tree nor a parent the path
// lacks — and the link stays.
TEST_F(HostileArchive, ParentPlantedAsALinkIsRefused) {
  fs::create_directories(at("/srv"));
  fs::create_directory_symlink(outside, at("/srv/site"));
  const Snapshot outsideBefore = snapshotTree(outside);
  for (const char* path : {"/srv/site/app", "/srv/site/not/yet/app"}) {
    SCOPED_TRACE(path);
    const std::string decl = declare(fmt::format(R"(
[module.m.file.ok]
path = "/etc/m/ok"
content = "converges anyway\n"

[module.m.archive.app]
path = "{}"
bundle = "{}"
)",
                                                 path, good),
                                     "planted-" + std::to_string(++decls) + ".toml");
    for (bool planning : {true, false}) {
      Result r = planning ? plan(decl, true) : apply(decl);
      EXPECT_EQ(r.code, 1) << r.out << r.err;
      auto app = outcomeOf(r.json(), "m.app");
      EXPECT_EQ(app["outcome"], "failed") << app.dump();
      const std::string reason = app.value("reason", "");
      EXPECT_NE(reason.find("/srv/site is a symbolic link"), std::string::npos) << reason;
      EXPECT_NE(reason.find("mesh-host does not follow links"), std::string::npos) << reason;
    }
    EXPECT_EQ(read("/etc/m/ok"), "converges anyway\n");
    EXPECT_EQ(snapshotTree(outside), outsideBefore) << "written through the link";
    EXPECT_TRUE(fs::is_symlink(at("/srv/site")));
  }
}

// Process bundles live under <state-dir>/bundles, reached beneath the state dir:
// a link planted there is refused, not followed.
TEST_F(HostileArchive, LinkPlantedAtTheBundlesDirIsRefused) {
  fs::create_directories(stateDir());
  fs::create_directory_symlink(outside, stateDir() + "/bundles");
  const Snapshot outsideBefore = snapshotTree(outside);
  const std::string decl = declare(fmt::format(R"(
[module.m.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/tool" }}
)",
                                               good),
                                   "process.toml");
  for (bool planning : {true, false}) {
    Result r = mesh({planning ? "plan" : "apply", decl, "--json", "--supervisor", "builtin"});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    auto svc = outcomeOf(r.json(), "m.svc");
    EXPECT_EQ(svc["outcome"], "failed") << svc.dump();
    const std::string reason = svc.value("reason", "");
    EXPECT_NE(reason.find(stateDir() + "/bundles is a symbolic link"), std::string::npos) << reason;
  }
  EXPECT_EQ(snapshotTree(outside), outsideBefore) << "unpacked through the link";
  EXPECT_TRUE(fs::is_symlink(stateDir() + "/bundles"));
}

}  // namespace
}  // namespace mesh::e2e
