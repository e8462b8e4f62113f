#include "blob/http_source.hh"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::blob {

namespace {

void initCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialise libcurl");
  });
}

long envNumber(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0)
    throw InputError("{}={}: expected a whole number of 0 or more", name, text);
  return n;
}

// The URL as it may appear in messages: user:password@ never does.
std::string redacted(const std::string& url) {
  const auto start = url.find("://");
  if (start == std::string::npos) return url;
  const auto hostStart = start + 3;
  auto pathStart = url.find('/', hostStart);
  if (pathStart == std::string::npos) pathStart = url.size();
  const auto at = url.rfind('@', pathStart);
  if (at == std::string::npos || at < hostStart) return url;
  return url.substr(0, hostStart) + "***@" + url.substr(at + 1);
}

uint64_t envBytes(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-')
    throw InputError("{}={}: expected a whole number of bytes", name, text);
  return n;
}

// Free bytes (for an unprivileged writer) and the size of the file system of `fd`.
std::pair<uint64_t, uint64_t> spaceOf(int fd) {
  struct statvfs v {};
  if (::fstatvfs(fd, &v) != 0) return {UINT64_MAX, UINT64_MAX};  // unknown: not the cap
  return {uint64_t{v.f_bavail} * v.f_frsize, uint64_t{v.f_blocks} * v.f_frsize};
}

constexpr uint64_t kFreeCheckEvery = uint64_t{16} << 20;

// Where streamed bytes go: the temp file and the hash, in one pass.
struct Sink {
  FdRef fd;  // the temp file, owned by the fetch
  Hasher hasher;
  int writeErrno = 0;
  uint64_t bytes = 0;
  // The body is cut off past `cap` bytes (the lesser of the most a blob may be and the
  // room left above `minFree`), and when the file system's free space falls under
  // `minFree` meanwhile (checked every kFreeCheckEvery bytes).
  uint64_t cap = UINT64_MAX;
  uint64_t minFree = 0;
  uint64_t nextFreeCheck = kFreeCheckEvery;
  bool overCap = false;
  bool outOfRoom = false;
  long long announced = -1;  // the last Content-Length heard, -1 none
};

// Notes the Content-Length (libcurl does not say it once MAXFILESIZE refused it).
size_t onHeader(char* data, size_t size, size_t count, void* userdata) {
  auto* sink = static_cast<Sink*>(userdata);
  const std::string_view line(data, size * count);
  constexpr std::string_view name = "content-length:";
  if (line.size() > name.size() &&
      std::equal(name.begin(), name.end(), line.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
    sink->announced = std::strtoll(std::string(line.substr(name.size())).c_str(), nullptr, 10);
  return size * count;
}

size_t onData(char* data, size_t size, size_t count, void* userdata) {
  auto* sink = static_cast<Sink*>(userdata);
  const size_t len = size * count;
  if (len > sink->cap - sink->bytes) {
    sink->overCap = true;
    return 0;  // stops the transfer (CURLE_WRITE_ERROR)
  }
  if (sink->bytes + len >= sink->nextFreeCheck) {
    sink->nextFreeCheck = sink->bytes + len + kFreeCheckEvery;
    if (spaceOf(sink->fd).first < sink->minFree + len) {
      sink->outOfRoom = true;
      return 0;
    }
  }
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::write(sink->fd, data + done, len - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      sink->writeErrno = errno;
      return 0;  // anything but `len` makes curl stop with CURLE_WRITE_ERROR
    }
    done += static_cast<size_t>(n);
  }
  sink->hasher.update({data, len});
  sink->bytes += len;
  return len;
}

bool isTransient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

// A failed attempt that may succeed when tried again.
struct Transient {
  std::string why;
};

using Curl = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

class HttpSource : public BlobSource {
 public:
  HttpSource(std::string prefix, std::string cacheDir, HttpOptions options)
      : prefix_(std::move(prefix)), cacheDir_(std::move(cacheDir)), options_(options) {
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  }

  std::string fetch(const Digest& d) override {
    const std::string cached = blobPathIn(cacheDir_, d);
    if (lstatPath(cached)) {
      if (Digest::ofFile(cached) == d) return cached;
      // A cache entry that no longer matches is fetched again, not trusted.
      if (::unlink(cached.c_str()) != 0 && errno != ENOENT)
        throwSys(fmt::format("cannot remove the corrupt cached blob {}", cached));
    }
    makeDirs(cacheDir_ + "/sha256", 0750);
    const std::string url = prefix_ + "/sha256/" + d.hex();
    const int attempts = options_.retries + 1;
    std::string lastWhy;
    for (int k = 0; k < attempts; ++k) {
      if (k > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(options_.backoffMs << (k - 1)));
      auto failed = attempt(url, d, cached);
      if (!failed) return cached;
      lastWhy = failed->why;
    }
    throw Error("blob {} could not be fetched from {}: {} ({} attempt{})", d.str(), redacted(url),
                lastWhy, attempts, attempts == 1 ? "" : "s");
  }

  std::string describe() const override { return redacted(prefix_); }
  void setProgress(ByteProgress progress) override { progress_ = std::move(progress); }

 private:
  // One GET into a temp file. Success moves the blob to `cached`; a failure worth
  // retrying is returned; any other failure throws.
  std::optional<Transient> attempt(const std::string& url, const Digest& d,
                                   const std::string& cached) {
    std::string tmp = cacheDir_ + "/.tmp-XXXXXX";
    Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd) throwSys(fmt::format("cannot create a temp file in {}", cacheDir_));
    Finally removeTmp([&] { ::unlink(tmp.c_str()); });

    Sink sink;
    sink.fd = fd;
    // Never more than the most a blob may be, nor so much that the file system is left
    // with less than its margin free: an endless body would otherwise fill the disk
    // before its digest is ever checked.
    const auto [freeNow, fsSize] = spaceOf(fd.get());
    sink.minFree = options_.minFreeBytes > 0 ? options_.minFreeBytes
                                             : std::min(uint64_t{1} << 30, fsSize / 20);
    const uint64_t room = freeNow > sink.minFree ? freeNow - sink.minFree : 0;
    sink.cap = std::min(options_.maxBytes, room);
    const bool roomIsTheCap = room < options_.maxBytes;
    auto tooBig = [&](const std::string& how) {
      if (roomIsTheCap || sink.outOfRoom)
        return Error(
            "blob {} from {} does not fit in {}: {}, and {} bytes are kept free there "
            "(MESH_HOST_HTTP_MIN_FREE); nothing was kept",
            d.str(), redacted(url), cacheDir_, how, sink.minFree);
      return Error(
          "blob {} from {} is larger than {} bytes, the most a blob may be "
          "(MESH_HOST_HTTP_MAX_BYTES): {}; nothing was kept",
          d.str(), redacted(url), options_.maxBytes, how);
    };
    if (sink.cap == 0) throw tooBig(fmt::format("only {} bytes are free", freeNow));
    Curl h(curl_easy_init(), curl_easy_cleanup);
    if (!h) throw Error("cannot start an HTTP transfer (libcurl)");
    char errbuf[CURL_ERROR_SIZE] = {};
    CURL* c = h.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onData);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &sink);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);  // CDNs and object stores redirect
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options_.connectTimeoutS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, options_.totalTimeoutS);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, options_.lowSpeedBytesPerS);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options_.lowSpeedTimeS);
    if (sink.cap < static_cast<uint64_t>(INT64_MAX))  // a Content-Length above it: refused at once
      curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(sink.cap));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mesh-host");
    Watch watch{&progress_, "downloading " + d.str()};
    if (progress_) {
      curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onTransfer);
      curl_easy_setopt(c, CURLOPT_XFERINFODATA, &watch);
      curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    // No proxy option is set: libcurl reads http_proxy, https_proxy and no_proxy itself.

    const CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    const std::string curlSays = errbuf[0] ? errbuf : curl_easy_strerror(rc);

    if (rc == CURLE_HTTP_RETURNED_ERROR) {
      if (status == 404 || status == 410)
        throw Error("blob {} not found at {} (HTTP {}); publish it there first", d.str(),
                    redacted(url), status);
      std::string why = fmt::format("HTTP {}", status);
      if (status >= 500 || status == 429) return Transient{why};
      throw Error("blob {} could not be fetched from {}: {}", d.str(), redacted(url), why);
    }
    if (rc == CURLE_FILESIZE_EXCEEDED)
      throw tooBig(sink.announced >= 0
                       ? fmt::format("the server announced {} bytes", sink.announced)
                       : fmt::format("the server announced more than {} bytes", sink.cap));
    if (rc == CURLE_WRITE_ERROR && sink.overCap)
      throw tooBig(fmt::format("the transfer was cut off after {} bytes", sink.bytes));
    if (rc == CURLE_WRITE_ERROR && sink.outOfRoom)
      throw tooBig(fmt::format("the transfer was stopped after {} bytes", sink.bytes));
    if (rc == CURLE_WRITE_ERROR && sink.writeErrno != 0)
      throw SysError(sink.writeErrno, fmt::format("cannot write {}", tmp));
    if (rc == CURLE_OPERATION_TIMEDOUT) return Transient{timedOut(c, sink)};
    if (rc == CURLE_PARTIAL_FILE) {
      curl_off_t announced = -1;
      curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
      return Transient{
          announced >= 0
              ? fmt::format("transfer cut short after {} of {} bytes", sink.bytes, announced)
              : fmt::format("transfer cut short after {} bytes", sink.bytes)};
    }
    if (rc != CURLE_OK) {
      if (isTransient(rc)) return Transient{curlSays};
      throw Error("blob {} could not be fetched from {}: {}", d.str(), redacted(url), curlSays);
    }

    const Digest got = sink.hasher.finish();
    if (got != d)
      throw Error("blob {} from {} is corrupt: its content hashes to {}", d.str(), redacted(url),
                  got.str());
    if (::fchmod(fd.get(), 0640) != 0) throwSys(fmt::format("cannot chmod {}", tmp));
    if (::fsync(fd.get()) != 0) throwSys(fmt::format("cannot fsync {}", tmp));
    fd.reset();
    if (::rename(tmp.c_str(), cached.c_str()) != 0)
      throwSys(fmt::format("cannot move {} to {}", tmp, cached));
    removeTmp.dismiss();
    syncDir(parentOf(cached));
    return std::nullopt;
  }

  std::string timedOut(CURL* c, const Sink& sink) const {
    double total = 0, connect = 0;
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &total);
    curl_easy_getinfo(c, CURLINFO_CONNECT_TIME, &connect);
    const long seconds = std::max(1L, std::lround(total));
    if (options_.totalTimeoutS > 0 && total + 0.5 >= static_cast<double>(options_.totalTimeoutS))
      return fmt::format("timed out after {} s (MESH_HOST_HTTP_TIMEOUT={})", seconds,
                         options_.totalTimeoutS);
    if (connect <= 0 && sink.bytes == 0)
      return fmt::format("timed out after {} s while connecting", seconds);
    return fmt::format(
        "timed out after {} s: slower than {} bytes/s for {} s (MESH_HOST_HTTP_LOW_SPEED_TIME)",
        seconds, options_.lowSpeedBytesPerS, options_.lowSpeedTimeS);
  }

  std::string prefix_;
  std::string cacheDir_;
  HttpOptions options_;
  ByteProgress progress_;

  struct Watch {
    const ByteProgress* progress;
    std::string what;
  };
  static int onTransfer(void* data, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
    const auto* w = static_cast<const Watch*>(data);
    (*w->progress)(w->what, static_cast<uint64_t>(now), static_cast<uint64_t>(total));
    return 0;  // go on
  }
};

}  // namespace

HttpOptions HttpOptions::fromEnvironment() {
  HttpOptions o;
  o.totalTimeoutS = envNumber("MESH_HOST_HTTP_TIMEOUT", o.totalTimeoutS);
  o.retries = static_cast<int>(std::min(envNumber("MESH_HOST_HTTP_RETRIES", o.retries), 10L));
  o.lowSpeedTimeS = std::max(1L, envNumber("MESH_HOST_HTTP_LOW_SPEED_TIME", o.lowSpeedTimeS));
  o.maxBytes = envBytes("MESH_HOST_HTTP_MAX_BYTES", o.maxBytes);
  o.minFreeBytes = envBytes("MESH_HOST_HTTP_MIN_FREE", o.minFreeBytes);
  return o;
}

std::unique_ptr<BlobSource> openHttpSource(const std::string& url, const std::string& cacheDir,
                                           const HttpOptions& options) {
  initCurlOnce();
  return std::make_unique<HttpSource>(url, cacheDir, options);
}

std::unique_ptr<BlobSource> openBlobSource(const std::string& spec, const std::string& cacheDir) {
  if (isUrl(spec)) return openHttpSource(spec, cacheDir, HttpOptions::fromEnvironment());
  return openDirectorySource(spec);
}

}  // namespace mesh::blob
