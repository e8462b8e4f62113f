#include "apply/diff.hh"

#include <cstdio>
#include <cstdlib>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

constexpr size_t kMaxDiffBytes = 1 << 20;

bool looksBinary(std::string_view s) {
  return s.find('\0') != std::string_view::npos;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string unifiedDiff(const std::string& oldPath, std::string_view newContent,
                        const std::string& label) {
  std::string oldContent;
  if (!oldPath.empty()) oldContent = readFile(oldPath).value_or("");
  if (oldContent.size() > kMaxDiffBytes || newContent.size() > kMaxDiffBytes)
    return fmt::format("(content differs: {} → {} bytes; too large to show)\n", oldContent.size(),
                       newContent.size());
  if (looksBinary(oldContent) || looksBinary(newContent))
    return fmt::format("(binary content differs: {} → {} bytes)\n", oldContent.size(),
                       newContent.size());

  char tmpl[] = "/tmp/mesh-host-diff.XXXXXX";
  if (!::mkdtemp(tmpl)) throwSys("cannot create a temp directory for a diff");
  const std::string dir = tmpl;
  Finally cleanup([&] { removeTree(dir); });
  atomicWrite(dir + "/old", oldContent, 0600);
  atomicWrite(dir + "/new", newContent, 0600);
  const std::string cmd =
      fmt::format("diff -u --label {} --label {} {} {}",
                  shellQuote(oldPath.empty() ? "/dev/null" : "a" + label), shellQuote("b" + label),
                  shellQuote(dir + "/old"), shellQuote(dir + "/new"));
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throwSys("cannot run diff");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  if (status == -1 || WEXITSTATUS(status) > 1) throw Error("diff failed for {}", label);
  return out;
}

}  // namespace mesh::apply
