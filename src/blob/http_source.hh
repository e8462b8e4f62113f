// A blob source behind an http(s) URL: GET <prefix>/sha256/<hex>, hashed while it
// streams into a temp file in the local cache, and moved into the cache only when
// it matches its digest. A blob already cached (and still matching) is not fetched
// again. libcurl honours http_proxy, https_proxy and no_proxy by itself.
#pragma once

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

  // Defaults, overridden by MESH_HOST_HTTP_TIMEOUT (seconds, the whole transfer) and
  // MESH_HOST_HTTP_RETRIES; throws InputError when one is not a number.
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
