// The cycle never reaches the network itself (docs/development.md, "Layout"): it
// fetches blobs through the opener its caller puts in Settings::openBlobs, and
// without one its blob source must be a directory.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "apply/context.hh"
#include "blob/blob_source.hh"
#include "util/error.hh"

namespace mesh::apply {
namespace {

class NamedSource : public blob::BlobSource {
 public:
  explicit NamedSource(std::string name) : name_(std::move(name)) {}
  std::string fetch(const Digest&) override { return {}; }
  std::string describe() const override { return name_; }

 private:
  std::string name_;
};

TEST(BlobOpener, TheCycleOpensItsBlobSourceThroughTheOpenerItIsGiven) {
  Settings s;
  s.stateDir = "/var/lib/mesh-host";
  s.blobs = "https://blobs.example/store";
  std::string gotSpec, gotCache;
  int calls = 0;
  s.openBlobs = [&](const std::string& spec, const std::string& cacheDir) {
    ++calls;
    gotSpec = spec;
    gotCache = cacheDir;
    return std::make_unique<NamedSource>("opened " + spec);
  };
  Context ctx(s);
  EXPECT_EQ(ctx.blobs().describe(), "opened https://blobs.example/store");
  EXPECT_EQ(ctx.blobs().describe(), "opened https://blobs.example/store");
  EXPECT_EQ(calls, 1);  // once per context
  EXPECT_EQ(gotSpec, "https://blobs.example/store");
  EXPECT_EQ(gotCache, "/var/lib/mesh-host/blobs");
}

TEST(BlobOpener, WithoutAnOpenerTheBlobSourceIsADirectoryAndAUrlIsRefused) {
  Settings s;
  s.stateDir = "/var/lib/mesh-host";
  s.blobs = "/srv/blobs";
  EXPECT_EQ(Context(s).blobs().describe(), "/srv/blobs");

  s.blobs = "http://127.0.0.1:1/store";
  std::string refused = "(not refused)";
  try {
    Context(s).blobs();
  } catch (const InputError& e) {
    refused = e.what();
  }
  EXPECT_NE(refused.find("blob source http://127.0.0.1:1/store is a URL"), std::string::npos)
      << refused;
}

}  // namespace
}  // namespace mesh::apply
