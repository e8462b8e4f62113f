// Shared helpers for the bundle tests: a temp dir, shell commands, and archives
// crafted with libarchive's writer for what real tools refuse to produce.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "../../support/temp_dir.hh"
#include "bundle/unpack.hh"
#include "util/error.hh"
#include "util/fd.hh"

namespace mesh::bundle::test {

// Hostile tests may leave unsearchable directories: mesh::test::TempDir removes them too.
struct TempDir : ::mesh::test::TempDir {
  TempDir() : ::mesh::test::TempDir("mesh-bundle-test") {}
};

inline void sh(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << cmd;
}

inline void writeText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

inline bool isEmptyDir(const std::string& path) {
  return std::filesystem::is_directory(path) && std::filesystem::is_empty(path);
}

// A directory opened as mesh-host opens one: O_DIRECTORY|O_NOFOLLOW.
inline Fd openDir(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throwSys("cannot open " + path);
  return fd;
}

inline std::string parentOf(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}
inline std::string nameOf(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// unpack() into the path `dest`, through the descriptor of its (existing) parent.
inline Manifest unpackTo(const std::string& archive, const std::string& dest,
                         const Limits& limits) {
  return unpack(archive, openDir(parentOf(dest)).get(), nameOf(dest), limits, dest);
}

// verify()'s difference for the tree at the path `dir`, through a descriptor of it.
inline std::optional<std::string> verifyAt(const std::string& dir, const Manifest& m,
                                           const VerifyCache* trusted = nullptr) {
  return verify(openDir(dir).get(), m, trusted, dir).difference;
}

struct Crafted {
  enum Kind { File, Dir, Symlink, HardLink, Fifo, CharDevice, BlockDevice };
  Kind kind;
  std::string path;
  std::string data;  // File: content; Symlink / HardLink: target
  mode_t mode = 0644;
};

// Writes a pax tar holding exactly `entries`, in order, names untouched.
inline void craftTar(const std::string& out, const std::vector<Crafted>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK);
  for (const auto& c : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, c.path.c_str());
    archive_entry_set_perm(e, c.mode);
    archive_entry_set_size(e, 0);
    switch (c.kind) {
      case Crafted::File:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(c.data.size()));
        break;
      case Crafted::Dir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case Crafted::Symlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, c.data.c_str());
        break;
      case Crafted::HardLink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, c.data.c_str());
        break;
      case Crafted::Fifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
      case Crafted::CharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdev(e, makedev(1, 3));
        break;
      case Crafted::BlockDevice:
        archive_entry_set_filetype(e, AE_IFBLK);
        archive_entry_set_rdev(e, makedev(7, 0));
        break;
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (c.kind == Crafted::File && !c.data.empty()) {
      ASSERT_EQ(archive_write_data(a, c.data.data(), c.data.size()),
                static_cast<la_ssize_t>(c.data.size()));
    }
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

}  // namespace mesh::bundle::test
