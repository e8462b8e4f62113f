#include "blob/blob_source.hh"

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

bool isUrl(const std::string& spec) {
  return spec.rfind("http://", 0) == 0 || spec.rfind("https://", 0) == 0;
}

std::unique_ptr<BlobSource> openDirectorySource(const std::string& dir) {
  if (isUrl(dir))
    throw InputError("blob source {} is a URL, and this caller fetches blobs from a directory only",
                     dir);
  return std::make_unique<DirectorySource>(dir);
}

}  // namespace mesh::blob
