// The libraries loaded on first use (util/lazy): mesh-host starts without them, and
// a missing one is an error that names it.
#include "util/lazy/lazy_lib.hh"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "util/error.hh"

namespace mesh::lazy {
namespace {

// What symbol(library, name) throws; a failure of the test when it throws nothing.
std::string errorOfSymbol(const char* library, const char* name) {
  try {
    symbol(library, name);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << library << " " << name;
  return "";
}

TEST(Lazy, AMissingLibraryIsAnErrorNamingIt) {
  const std::string e = errorOfSymbol("libmesh-no-such-library.so.7", "f");
  EXPECT_NE(e.find("cannot load libmesh-no-such-library.so.7"), std::string::npos) << e;
}

TEST(Lazy, AMissingSymbolIsAnErrorNamingIt) {
  const std::string e = errorOfSymbol("libc.so.6", "mesh_no_such_function");
  EXPECT_NE(e.find("libc.so.6 has no mesh_no_such_function"), std::string::npos) << e;
}

TEST(Lazy, LoadsOnFirstUseOnly) {
  // This test binary links nothing that needs libz's zlibVersion.
  ASSERT_FALSE(loaded("libz.so.1")) << "libz already in this process: pick another library";
  auto* version = reinterpret_cast<const char* (*)()>(symbol("libz.so.1", "zlibVersion"));
  ASSERT_NE(version, nullptr);
  EXPECT_NE(std::string(version()), "");
  EXPECT_TRUE(loaded("libz.so.1"));
}

TEST(Lazy, TheBinaryDoesNotLinkTheLibrariesItLoadsOnUse) {
  // Read the ELF dynamic section of mesh-host: libcurl, libarchive, libsystemd and
  // the HTTP server's library (fleet serve's module) are not needed to start it.
  const std::string cmd = std::string("readelf -d ") + MESH_HOST_BINARY + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  ASSERT_NE(out.find("(NEEDED)"), std::string::npos) << out;
  EXPECT_EQ(out.find("libcurl"), std::string::npos) << out;
  EXPECT_EQ(out.find("libarchive"), std::string::npos) << out;
  EXPECT_EQ(out.find("libsystemd"), std::string::npos) << out;
  EXPECT_EQ(out.find("httplib"), std::string::npos) << out;
}

}  // namespace
}  // namespace mesh::lazy
