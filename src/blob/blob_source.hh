// Where bundles and file blobs come from, addressed by digest. A directory
// source holds them at <dir>/sha256/<hex>; an http(s) source serves them at
// <url>/sha256/<hex> and is cached locally (blob/http_source.hh, a library of its
// own, mesh_blob_http: the one part of this layer that reaches the network). Every
// blob handed out has been hashed and matched against its digest.
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

// A directory source; throws InputError when `dir` is an http(s):// URL (fetching
// over the network is openBlobSource's, in blob/http_source.hh).
std::unique_ptr<BlobSource> openDirectorySource(const std::string& dir);

// Whether `spec` is an http:// or https:// URL.
bool isUrl(const std::string& spec);

// The path of a blob inside a directory store.
std::string blobPathIn(const std::string& dir, const Digest& d);

}  // namespace mesh::blob
