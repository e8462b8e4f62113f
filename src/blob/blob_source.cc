#include "blob/blob_source.hh"

#include "blob/http_source.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::blob {

std::string blobPathIn(const std::string& dir, const Digest& d) {
  return dir + "/sha256/" + d.hex();
}

namespace {

class DirectorySource : public BlobSource {
 public:
  explicit DirectorySource(std::string dir) : dir_(std::move(dir)) {}

  std::string fetch(const Digest& d) override {
    auto path = blobPathIn(dir_, d);
    if (!lstatPath(path))
      throw Error("blob {} not found in {} (expected at {}); publish it there first", d.str(), dir_,
                  path);
    auto got = Digest::ofFile(path);
    if (got != d)
      throw Error("blob {} in {} is corrupt: its content hashes to {}", d.str(), dir_, got.str());
    return path;
  }

  std::string describe() const override { return dir_; }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<BlobSource> openBlobSource(const std::string& spec, const std::string& cacheDir) {
  if (spec.rfind("http://", 0) == 0 || spec.rfind("https://", 0) == 0)
    return openHttpSource(spec, cacheDir, HttpOptions::fromEnvironment());
  return std::make_unique<DirectorySource>(spec);
}

}  // namespace mesh::blob
