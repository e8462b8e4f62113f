#include "fleet/enroll.hh"

#include <fmt/format.h>

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "fleet/node_signed.hh"
#include "trust/signing.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using json = nlohmann::json;

std::string enrollmentText(const std::string& cluster, const std::string& node,
                           const trust::NodePublicKey& key, int64_t atMs) {
  return fmt::format("mesh-host enrollment v1\ncluster {}\nnode {}\nkey {}\nat {}\n", cluster, node,
                     key.text(), atMs);
}

std::string encodeEnrollment(const std::string& cluster, const std::string& node,
                             const trust::NodePublicKey& key, int64_t atMs,
                             const trust::OperatorKey& op) {
  const std::string signature = trust::signatureText(op, enrollmentText(cluster, node, key, atMs));
  return jsonData(json{{"node", node},
                       {"cluster", cluster},
                       {"key", key.text()},
                       {"enrolled_at_ms", atMs},
                       {"enrolled_by", op.publicKey().text()},
                       {"signature", signature.substr(0, signature.find_last_not_of('\n') + 1)}});
}

namespace {

// The record read, everything checked but who signed it and the signature.
std::pair<Enrollment, trust::DetachedSignature> readEnrollment(const std::string& text,
                                                               const std::string& cluster,
                                                               const std::string& node,
                                                               const std::string& where) {
  const json j = parseEtcdJson(text);
  if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("signature") ||
      !j["signature"].is_string())
    throw InputError("{}: not an enrollment record", where);
  // "node" and "cluster", "" when missing; of another type, not a record (json's value()
  // would throw its own exception, which no caller of this expects).
  const auto stringField = [&](const char* name) {
    const auto it = j.find(name);
    if (it == j.end()) return std::string();
    if (!it->is_string()) throw InputError("{}: not an enrollment record", where);
    return it->get<std::string>();
  };
  Enrollment e;
  e.node = stringField("node");
  e.cluster = stringField("cluster");
  if (e.node != node || e.cluster != cluster)
    throw InputError("{}: the record enrolls node {} of cluster {}, not this one", where, e.node,
                     e.cluster);
  e.key = trust::NodePublicKey::parse(j["key"].get<std::string>(), where);
  if (!j.contains("enrolled_at_ms") || !j["enrolled_at_ms"].is_number_integer())
    throw InputError("{}: not an enrollment record (no enrolled_at_ms)", where);
  e.enrolledAtMs = j["enrolled_at_ms"].get<int64_t>();
  auto sig = trust::parseSignature(j["signature"].get<std::string>(), where);
  e.enrolledBy = sig.signer;
  return {std::move(e), std::move(sig)};
}

}  // namespace

Enrollment verifyEnrollment(const std::string& text, const std::string& cluster,
                            const std::string& node,
                            const std::vector<trust::OperatorPublicKey>& trusted,
                            const std::string& where) {
  auto [e, sig] = readEnrollment(text, cluster, node, where);
  if (std::find(trusted.begin(), trusted.end(), sig.signer) == trusted.end())
    throw InputError("{}: enrolled by {}, which is not a trusted operator key", where,
                     sig.signer.text());
  if (!trust::signatureMatches(sig, enrollmentText(cluster, node, e.key, e.enrolledAtMs)))
    throw InputError("{}: its signature does not match the record (tampered?)", where);
  return e;
}

std::string VerifiedMemo::entryOf(const std::string& digest) const {
  if (!dir_) return digest;
  // HMAC-SHA256 under key_ (crypto_auth_hmacsha256), from the state keyed once.
  auto state = keyed_;
  std::string tag(crypto_auth_hmacsha256_BYTES, '\0');
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(digest.data()),
                                digest.size());
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(tag.data()));
  return tag;
}

bool VerifiedMemo::has(const std::string& digest) const {
  auto entry = entryOf(digest);  // the key is set once, before any reader: no lock for the HMAC
  std::lock_guard lock(mutex_);
  if (seen_.count(entry) == 0) return false;
  if (dir_) used_.insert(std::move(entry));
  return true;
}

void VerifiedMemo::add(const std::string& digest) {
  auto entry = entryOf(digest);
  std::lock_guard lock(mutex_);
  if (seen_.size() >= kMaxEntries) seen_.clear();
  if (dir_) used_.insert(entry);
  seen_.insert(std::move(entry));
  added_ = true;
}

namespace {

constexpr size_t kTagBytes = crypto_auth_hmacsha256_BYTES;

// `name` in the directory `dir`, not through a link, only when it is a regular file of
// the running user's that no one else may read, and at most `max` bytes.
std::optional<std::string> readSmallFile(int dir, const char* name, size_t max) {
  Fd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0 || static_cast<size_t>(st.st_size) > max)
    return std::nullopt;
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (::read(fd.get(), bytes.data(), bytes.size()) != st.st_size) return std::nullopt;
  return bytes;
}

// The directory `name` in `at` (a path when `at` is AT_FDCWD), opened without following
// a link in its last component, and only when it belongs to the running user: a root
// `fleet status` run with another user's HOME must not write where that user points it.
std::optional<Fd> ownDirectory(int at, const std::string& name) {
  Fd fd(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) return std::nullopt;
  return fd;
}

bool writeWhole(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool VerifiedMemo::persistIn(const std::string& dir) {
  const auto slash = dir.find_last_of('/');
  if (slash == std::string::npos || slash + 1 == dir.size()) return false;
  const std::string parent = slash == 0 ? "/" : dir.substr(0, slash), name = dir.substr(slash + 1);
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  // The parent and DIR itself are the running user's, reached without a link at their
  // last component; everything after goes through DIR's descriptor.
  const auto base = ownDirectory(AT_FDCWD, parent);
  if (!base) return false;
  ::mkdirat(base->get(), name.c_str(), 0700);
  auto own = ownDirectory(base->get(), name);
  if (!own || ::fchmod(own->get(), 0700) != 0) return false;
  if (Fd fd(
          ::openat(own->get(), "key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      fd) {
    std::string key(crypto_auth_hmacsha256_KEYBYTES, '\0');
    randombytes_buf(key.data(), key.size());
    if (!writeWhole(fd.get(), key) || ::fsync(fd.get()) != 0) {
      ::unlinkat(own->get(), "key", 0);
      return false;
    }
  }
  const auto key = readSmallFile(own->get(), "key", crypto_auth_hmacsha256_KEYBYTES);
  if (!key || key->size() != crypto_auth_hmacsha256_KEYBYTES) return false;
  std::lock_guard lock(mutex_);
  dir_ = std::move(*own);
  key_ = *key;
  crypto_auth_hmacsha256_init(&keyed_, reinterpret_cast<const unsigned char*>(key_.data()),
                              key_.size());
  seen_.clear();
  used_.clear();
  added_ = false;
  const auto memo = readSmallFile(dir_.get(), "verified", kMaxEntries * kTagBytes);
  if (memo && memo->size() % kTagBytes == 0)
    for (size_t at = 0; at < memo->size(); at += kTagBytes)
      seen_.insert(memo->substr(at, kTagBytes));
  loaded_ = seen_.size();
  return true;
}

void VerifiedMemo::save() const {
  std::lock_guard lock(mutex_);
  if (!dir_ || (!added_ && used_.size() == loaded_)) return;
  std::string bytes;
  bytes.reserve(used_.size() * kTagBytes);
  for (const auto& e : used_) bytes += e;
  const std::string tmp = fmt::format("verified.{}.tmp", ::getpid());
  Fd fd(::openat(dir_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 0600));
  if (!fd) return;
  const bool ok = writeWhole(fd.get(), bytes);
  fd.reset();
  if (!ok || ::renameat(dir_.get(), tmp.c_str(), dir_.get(), "verified") != 0)
    ::unlinkat(dir_.get(), tmp.c_str(), 0);
}

namespace {

// What a memo entry stands for: every input of the check, length-prefixed.
// Hashed as they are: the value (a KB or more) is not copied into one text first.
std::string memoDigest(std::initializer_list<std::string_view> parts) {
  Hasher h;
  for (const auto p : parts) {
    h.update(std::to_string(p.size()));
    h.update(":");
    h.update(p);
  }
  return h.finish().str();
}

}  // namespace

NodeTrust checkNode(const std::string& cluster, const std::string& node,
                    const std::optional<EtcdKeyValue>& enrollment,
                    const std::vector<EtcdKeyValue>& signedKeys,
                    const std::vector<trust::OperatorPublicKey>& trusted, VerifiedMemo* memo) {
  NodeTrust t;
  if (enrollment) {
    try {
      // The memo vouches for the signature alone: whether its signer is one of the
      // keys trusted now is checked every time.
      const std::string d =
          memo ? memoDigest({"enrollment", cluster, node, enrollment->value}) : "";
      std::optional<Enrollment> remembered;
      if (memo && memo->has(d)) {
        auto [e, sig] = readEnrollment(enrollment->value, cluster, node, enrollment->key);
        if (std::find(trusted.begin(), trusted.end(), sig.signer) != trusted.end())
          remembered = std::move(e);
      }
      if (remembered) {
        t.enrollment = std::move(remembered);
      } else {
        t.enrollment = verifyEnrollment(enrollment->value, cluster, node, trusted, enrollment->key);
        if (memo) memo->add(d);
      }
    } catch (const InputError& e) {
      t.verdict = NodeTrust::Verdict::Forged;
      t.reason = e.what();
      return t;
    }
  }
  if (signedKeys.empty()) return t;
  if (!t.enrollment) {
    t.verdict = NodeTrust::Verdict::Unenrolled;
    t.reason = fmt::format(
        "it publishes a status but its key is not enrolled; enroll it with mesh-host fleet enroll "
        "{} KEY, KEY as mesh-host key show prints it on that node (or forget it with mesh-host "
        "fleet forget {})",
        node, node);
    return t;
  }
  const std::string* checked = nullptr;  // the last value found good
  for (const auto& kv : signedKeys) {
    // A node puts its status and its seen copy with the same bytes: one check for both.
    if (checked && *checked == kv.value) continue;
    const std::string d =
        memo ? memoDigest({"signed", cluster, node, t.enrollment->key.text(), kv.value}) : "";
    if (memo && memo->has(d)) {
      checked = &kv.value;
      continue;
    }
    SignedFor signedFor;
    const auto verdict = checkNodeJson(kv.value, t.enrollment->key, signedFor);
    std::string why;
    if (verdict == NodeSignature::Unsigned) why = "it is not signed";
    if (verdict == NodeSignature::Invalid) why = "it is not signed by the node's enrolled key";
    if (why.empty() && (signedFor.node != node || signedFor.cluster != cluster))
      why = "it is signed for another node or cluster";
    if (!why.empty()) {
      t.verdict = NodeTrust::Verdict::Forged;
      t.reason = fmt::format("{}: {}", kv.key, why);
      return t;
    }
    if (memo) memo->add(d);
    checked = &kv.value;
  }
  return t;
}

void checkAhead(const std::string& cluster, const std::string& node, const std::string& enrollment,
                const std::string& status, const std::vector<trust::OperatorPublicKey>& trusted,
                VerifiedMemo& memo) {
  try {
    // As checkNode: the enrollment's signature by a key trusted now, then the status
    // signed by the enrolled key and naming this node and cluster.
    const std::string d = memoDigest({"enrollment", cluster, node, enrollment});
    trust::NodePublicKey key;
    if (memo.has(d)) {
      auto [e, sig] = readEnrollment(enrollment, cluster, node, "");
      if (std::find(trusted.begin(), trusted.end(), sig.signer) == trusted.end()) return;
      key = e.key;
    } else {
      key = verifyEnrollment(enrollment, cluster, node, trusted, "").key;
      memo.add(d);
    }
    const std::string s = memoDigest({"signed", cluster, node, key.text(), status});
    if (memo.has(s)) return;
    SignedFor signedFor;
    if (checkNodeJson(status, key, signedFor) == NodeSignature::Valid && signedFor.node == node &&
        signedFor.cluster == cluster)
      memo.add(s);
  } catch (...) {
    // Left to checkNode.
  }
}

}  // namespace mesh::fleet
