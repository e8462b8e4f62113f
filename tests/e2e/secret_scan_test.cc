// The secret scan: after sealed and `from` credentials were applied, changed,
// planned and applied again with a running service that restarts on them, no
// byte of any secret — nor its hex, nor its base64 — is in any output mesh-host
// printed or any file it wrote, except the credentials' own target files.
#include <sodium.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness.hh"
#include "trust/node_key.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

std::string hexOf(const std::string& s, bool upper) {
  static constexpr char lo[] = "0123456789abcdef";
  static constexpr char up[] = "0123456789ABCDEF";
  const char* digits = upper ? up : lo;
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string base64Of(const std::string& s, int variant) {
  std::string out(sodium_base64_ENCODED_LEN(s.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(s.data()),
                    s.size(), variant);
  out.resize(std::strlen(out.c_str()));
  return out;
}

// Every form a secret could leak in: its bytes, its hex, and its base64 at each of
// the three alignments it could have inside a longer encoded text (the middle part
// that does not depend on the neighbouring bytes).
std::vector<std::string> needlesFor(const std::string& secret) {
  std::vector<std::string> needles = {secret, hexOf(secret, false), hexOf(secret, true)};
  for (int variant : {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_URLSAFE}) {
    for (size_t shift = 0; shift < 3; ++shift) {
      const std::string encoded = base64Of(std::string(shift, '\0') + secret, variant);
      // Drop the characters that mix in the prefix, and the last block.
      const size_t skip = shift == 0 ? 0 : (shift * 8 + 5) / 6 + 1;
      needles.push_back(encoded.substr(skip, encoded.size() - skip - 4));
    }
  }
  return needles;
}

class SecretScan : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    ASSERT_GE(sodium_init(), 0);
    extraArgs = {"--supervisor", "builtin"};
    bundle = publish(makeArchive({{"bin/svc", "#!/bin/sh\necho svc up\nexec sleep 100000\n"}},
                                 "chmod 755 bin/svc && tar -cf out bin"));
    fs::create_directories(work + "/secrets");
  }

  void TearDown() override {
    apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));  // stops the service
    Node::TearDown();  // kills whatever that could not stop
  }

  std::string secretFile(const std::string& name, const std::string& value) {
    const std::string path = work + "/secrets/" + name;
    std::ofstream(path, std::ios::trunc) << value;
    secrets.push_back(value);
    return path;
  }

  std::string text(const std::string& sealed, const std::string& fromFile) const {
    return "[module.s.credential.sealed-key]\npath = \"/etc/s/sealed-key\"\nsealed = \"" + sealed +
           "\"\n\n[module.s.credential.dev-key]\npath = \"/etc/s/dev-key\"\nfrom = \"" + fromFile +
           "\"\n\n[module.s.file.config]\npath = \"/etc/s/config\"\ncontent = \"a = 1\\n\"\n\n"
           "[module.s.process.runtime]\nbundle = \"" +
           bundle +
           "\"\nrestart-on = [\"s.sealed-key\", \"s.dev-key\"]\n"
           "unit = { ExecStart = \"{bundle}/bin/svc\", Restart = \"always\" }\n";
  }

  // Runs mesh-host and keeps everything it printed for the scan.
  Result capture(std::vector<std::string> args) {
    Result r = mesh(std::move(args));
    captured.push_back(r.out);
    captured.push_back(r.err);
    return r;
  }

  std::string seal(const std::string& pub, const std::string& file) {
    Result r = capture({"seal", "--to", pub, file});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  std::string bundle;
  std::vector<std::string> secrets;
  std::vector<std::string> captured;
};

TEST_F(SecretScan, NoSecretInAnyOutputOrFile) {
  ASSERT_EQ(capture({"apply", declare("node = \"test\"\nempty = true\n", "empty.toml")}).code, 0);
  const std::string pub = trust::NodeKey::loadOrCreate(stateDir()).publicKeyText();
  const std::string metrics = work + "/metrics.prom";

  // First secrets, applied.
  std::string sealed = seal(pub, secretFile("sealed-1", "first-sealed-secret-Qx7v9LmR2"));
  std::string fromFile = secretFile("dev", "first-from-secret-Hk4p8ZwN3");
  std::string decl = declare(text(sealed, fromFile));
  Result first = capture({"apply", decl, "--json", "--metrics", metrics});
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_EQ(outcomeOf(first.json(), "s.sealed-key")["outcome"], "created");
  EXPECT_EQ(outcomeOf(first.json(), "s.dev-key")["outcome"], "created");
  captured.push_back(slurp(metrics));

  // Changed secrets: planned (human and JSON), then applied, which restarts the service.
  sealed = seal(pub, secretFile("sealed-2", "second-sealed-secret-Jc5t1BvY6"));
  std::ofstream(fromFile, std::ios::trunc) << "second-from-secret-Wd2n6GsE8";
  secrets.push_back("second-from-secret-Wd2n6GsE8");
  decl = declare(text(sealed, fromFile));
  for (bool json : {false, true}) {
    Result p = json ? capture({"plan", decl, "--json"}) : capture({"plan", decl, "-v"});
    EXPECT_EQ(p.code, 3) << p.out << p.err;
    EXPECT_NE(p.out.find("(secret changed)"), std::string::npos) << p.out;
  }
  Result second = capture({"apply", decl, "-v", "--metrics", metrics});
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  captured.push_back(slurp(metrics));
  Result third = capture({"apply", decl, "--json", "--metrics", metrics});
  EXPECT_EQ(outcomeOf(third.json(), "s.sealed-key")["outcome"], "unchanged");
  captured.push_back(slurp(metrics));
  EXPECT_EQ(read("/etc/s/sealed-key"), "second-sealed-secret-Jc5t1BvY6");
  EXPECT_EQ(read("/etc/s/dev-key"), "second-from-secret-Wd2n6GsE8");

  for (const auto& cmd : {"status", "history", "generations"}) {
    capture({cmd});
    capture({cmd, "--json"});
  }
  capture({"status", "-v"});
  Result dump = runCommand({"sqlite3", stateDir() + "/state.db", ".dump"});
  ASSERT_EQ(dump.code, 0) << dump.err;
  captured.push_back(dump.out);
  // The declaration is stored as a generation, with only the ciphertext in it (its text
  // a BLOB value, which .dump shows in hex: read as text).
  Result texts = runCommand(
      {"sqlite3", stateDir() + "/state.db", "SELECT CAST(text AS TEXT) FROM generation_texts"});
  ASSERT_EQ(texts.code, 0) << texts.err;
  captured.push_back(texts.out);
  EXPECT_NE(texts.out.find(sealed), std::string::npos) << "no generation holds the declaration";

  // Every file under the test's directory, except the secrets' sources and their
  // targets, in raw bytes: state.db and its WAL, the supervisor's log, metrics, …
  const std::set<std::string> allowed = {at("/etc/s/sealed-key"), at("/etc/s/dev-key")};
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(work)) {
    const std::string path = e.path().string();
    if (!e.is_regular_file() || e.is_symlink() || allowed.count(path) ||
        path.starts_with(work + "/secrets/"))
      continue;
    files[path] = slurp(path);
  }
  EXPECT_TRUE(files.count(stateDir() + "/state.db"));
  EXPECT_TRUE(files.count(stateDir() + "/log/s.service.log")) << "no builtin supervisor log";
  EXPECT_TRUE(files.count(metrics));

  for (const auto& secret : secrets) {
    // The scan itself works: each encoding of the secret, wherever it sits in a longer
    // text, is caught by one of its needles.
    for (const auto& [variant, prefix] : {std::pair{sodium_base64_VARIANT_ORIGINAL, ""},
                                          std::pair{sodium_base64_VARIANT_URLSAFE, "a"},
                                          std::pair{sodium_base64_VARIANT_ORIGINAL, "ab"}}) {
      const std::string encodings[] = {base64Of(prefix + secret + "tail", variant),
                                       "x" + hexOf(secret, false) + "y", "<" + secret + ">"};
      for (const auto& encoded : encodings) {
        bool caught = false;
        for (const auto& needle : needlesFor(secret))
          caught |= encoded.find(needle) != std::string::npos;
        EXPECT_TRUE(caught) << encoded;
      }
    }
    for (const auto& needle : needlesFor(secret)) {
      ASSERT_GE(needle.size(), 12u);
      for (size_t i = 0; i < captured.size(); ++i)
        EXPECT_EQ(captured[i].find(needle), std::string::npos)
            << "output #" << i << " holds " << needle << ":\n"
            << captured[i];
      for (const auto& [path, bytes] : files)
        EXPECT_EQ(bytes.find(needle), std::string::npos) << path << " holds " << needle;
    }
  }
}

}  // namespace
}  // namespace mesh::e2e
