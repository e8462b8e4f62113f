// `mesh-host blob add FILE --to DIR`: publishes a bundle (or any file) into a
// directory store at DIR/sha256/<hex> and prints "sha256:<hex>", ready for a
// declaration. Written by temp file + fsync + rename, so a reader of the store
// never sees half a blob; adding what is already there changes nothing.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "blob/blob_source.hh"
#include "cli/commands.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::cli {

void BlobOptions::addTo(CLI::App& cmd) {
  cmd.require_subcommand(1);
  auto* add = cmd.add_subcommand("add",
                                 "copy FILE into the directory store DIR by its digest "
                                 "and print the digest");
  add->add_option("FILE", file, "the bundle or file to publish")->required();
  add->add_option("--to", to, "the directory store (served as --blobs, or over http)")
      ->option_text("DIR")
      ->required();
}

namespace {

void writeAll(int fd, const char* data, size_t len, const std::string& what) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot write {}", what));
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

// Copies `file` into the store, hashing the bytes it copies; returns their digest.
Digest publish(const std::string& file, const std::string& store) {
  Fd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) {
    // A file that is not there is bad input; one that cannot be read is a failure.
    if (errno == ENOENT || errno == ENOTDIR) throw InputError("{}: no such file", file);
    throwSys(fmt::format("cannot open {}", file));
  }
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", file));
  if (!S_ISREG(st.st_mode)) throw InputError("{}: not a regular file", file);

  const std::string dir = store + "/sha256";
  makeDirs(dir, 0755);
  std::string tmp = dir + "/.tmp-XXXXXX";
  Fd out(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!out) throwSys(fmt::format("cannot create a temp file in {}", dir));
  Finally removeTmp([&] { ::unlink(tmp.c_str()); });

  Hasher hasher;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot read {}", file));
    }
    if (n == 0) break;
    hasher.update({buf, static_cast<size_t>(n)});
    writeAll(out.get(), buf, static_cast<size_t>(n), tmp);
  }
  const Digest digest = hasher.finish();
  const std::string target = blob::blobPathIn(store, digest);
  if (lstatPath(target) && Digest::ofFile(target) == digest) return digest;  // already there

  if (::fchmod(out.get(), 0644) != 0) throwSys(fmt::format("cannot chmod {}", tmp));
  if (::fsync(out.get()) != 0) throwSys(fmt::format("cannot fsync {}", tmp));
  out.reset();
  if (::rename(tmp.c_str(), target.c_str()) != 0)
    throwSys(fmt::format("cannot move {} to {}", tmp, target));
  removeTmp.dismiss();
  syncDir(dir);
  return digest;
}

}  // namespace

int runBlob(const BlobOptions& b) {
  const Digest d = publish(b.file, b.to);
  std::printf("%s\n", d.str().c_str());
  return kExitOk;
}

}  // namespace mesh::cli
