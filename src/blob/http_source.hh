// A blob source behind an http(s) URL: GET <prefix>/sha256/<hex>, hashed while it
// streams into a temp file in the local cache, and moved into the cache only when
// it matches its digest. A blob already cached (and still matching) is not fetched
// again. libcurl honours http_proxy, https_proxy and no_proxy by itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "blob/blob_source.hh"

namespace mesh::blob {

struct HttpOptions {
  long connectTimeoutS = 10;
  long totalTimeoutS = 0;         // 0: none; the low-speed limit catches a stalled transfer
  long lowSpeedBytesPerS = 1024;  // abort when slower than this…
  long lowSpeedTimeS = 30;        // …for this long
  int retries = 2;                // after the first attempt, for transient failures
  long backoffMs = 200;           // before retry k (from 0): backoffMs * 2^k
  // The most a blob may be: a body larger than this (announced or streamed) is cut off
  // and the fetch fails, not retried. 8 GiB: an archive of `max-bytes`' default 4 GiB,
  // uncompressed, fits with room to spare.
  uint64_t maxBytes = uint64_t{8} << 30;
  // Free space the download leaves in the cache's file system, whatever maxBytes says:
  // it stops before taking the last of it. 0: 5% of the file system, at most 1 GiB.
  uint64_t minFreeBytes = 0;

  // Defaults, overridden by MESH_HOST_HTTP_TIMEOUT (seconds, the whole transfer),
  // MESH_HOST_HTTP_RETRIES, MESH_HOST_HTTP_MAX_BYTES, MESH_HOST_HTTP_MIN_FREE (bytes)
  // and MESH_HOST_HTTP_LOW_SPEED_TIME (seconds slower than 1 KiB/s before a transfer is
  // given up); throws InputError when one is not a number.
  static HttpOptions fromEnvironment();
};

// `url` starts with http:// or https://; fetched blobs are cached under
// <cacheDir>/sha256/<hex> (cacheDir is created 0750 when missing).
std::unique_ptr<BlobSource> openHttpSource(const std::string& url, const std::string& cacheDir,
                                           const HttpOptions& options);

// `spec` is a directory path or an http(s):// URL; blobs fetched from a URL are
// cached under `cacheDir` (<state-dir>/blobs), with HttpOptions::fromEnvironment().
std::unique_ptr<BlobSource> openBlobSource(const std::string& spec, const std::string& cacheDir);

}  // namespace mesh::blob
