// Where bundles and file blobs come from, addressed by digest. A directory
// source holds them at <dir>/sha256/<hex>; an http(s) source serves them at
// <url>/sha256/<hex> and is cached locally (fleet/http_source.hh). Every blob
// handed out has been hashed and matched against its digest.
#pragma once

#include <memory>
#include <string>

#include "util/byte_progress.hh"
#include "util/digest.hh"

namespace mesh::blob {

class BlobSource {
 public:
  virtual ~BlobSource() = default;
  // A local path whose content hashes to `d`. Throws mesh::Error with a clear
  // reason when the blob is missing, unreadable or does not match its digest.
  virtual std::string fetch(const Digest& d) = 0;
  virtual std::string describe() const = 0;
  // Who hears how far a transfer has got (a remote source; a local one has none).
  virtual void setProgress(ByteProgress) {}
};

// `spec` is a directory path or an http(s):// URL; blobs fetched from a URL are
// cached under `cacheDir` (<state-dir>/blobs).
std::unique_ptr<BlobSource> openBlobSource(const std::string& spec, const std::string& cacheDir);

// The path of a blob inside a directory store.
std::string blobPathIn(const std::string& dir, const Digest& d);

}  // namespace mesh::blob
