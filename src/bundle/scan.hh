// Reading an archive entry by entry with every safety check applied, shared by
// unpack() (which writes through a Sink) and readManifest() (which does not).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bundle/unpack.hh"
#include "util/byte_progress.hh"

namespace mesh::bundle {

// Receives entries only after they passed every check; paths are normal entry
// paths whose parents have already been made. Throws SysError on failure.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void makeDirectory(const std::string& path) = 0;
  virtual void openFile(const std::string& path) = 0;
  virtual void writeFile(uint64_t offset, std::string_view data) = 0;
  virtual void closeFile(mode_t mode, uint64_t size, std::optional<timespec> mtime) = 0;
  virtual void makeSymlink(const std::string& path, const std::string& target) = 0;
  virtual void makeHardLink(const std::string& path, const std::string& existing) = 0;
  // Every entry is in: apply directory modes, make it durable.
  virtual void finish(const Manifest& m) = 0;
};

// Throws mesh::Error("archive {path}: entry '{name}': {why}") on anything refused.
// `progress`, when set, hears the archive's bytes read so far (compressed, as on disk)
// out of its size, as `what`.
Manifest scanArchive(const std::string& archivePath, const Limits& limits, Sink* sink,
                     const ByteProgress& progress = {}, std::string_view what = {});

}  // namespace mesh::bundle
