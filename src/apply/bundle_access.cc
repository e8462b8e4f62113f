#include "apply/bundle_access.hh"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>

#include "util/acl.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"

namespace mesh::apply {

namespace {

using acl::kExec;
using acl::kRead;

constexpr unsigned kAll = 7;

std::string userName(uid_t uid) {
  std::vector<char> buf(4096);
  passwd pw{}, *found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found)
    return fmt::format("{} (uid {})", found->pw_name, uid);
  return fmt::format("uid {}", uid);
}

bool isDigestHex(std::string_view n) {
  return n.size() == 64 && n.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The directory `name` in `dir` for reading its ACL: never a link, never a
// non-directory (nullopt then, and when it is gone).
std::optional<Fd> openChild(int dir, const std::string& name, const std::string& shown) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) return fd;
  if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return std::nullopt;
  throwSys(fmt::format("cannot open {}", shown));
}

std::vector<std::string> bundleNames(int bundles, const std::string& shown) {
  Fd fd(::openat(bundles, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = fd ? ::fdopendir(fd.get()) : nullptr;
  if (!d) throwSys(fmt::format("cannot list {}", shown));
  fd.release();
  Finally closeDir([&] { ::closedir(d); });
  std::vector<std::string> out;
  while (auto* e = ::readdir(d))
    if (isDigestHex(e->d_name)) out.emplace_back(e->d_name);
  return out;
}

// While a user of ours may traverse the state directory, nothing directly in it
// but bundles/ gives others anything (a name it learns leads nowhere): a
// directory or file that does (the builtin supervisor's services/ and log/ are
// made 0755) loses its bits for others. Never through a link (fchmodat with
// AT_SYMLINK_NOFOLLOW refuses one); the store's files are never opened (a close
// would drop the store's own locks), and are 0640/0600 anyway.
void closeToOthers(Context& ctx, int stateDir, const std::string& shown,
                   std::vector<std::string>& changes) {
  Fd fd(::openat(stateDir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = fd ? ::fdopendir(fd.get()) : nullptr;
  if (!d) throwSys(fmt::format("cannot list {}", shown));
  fd.release();
  Finally closeDir([&] { ::closedir(d); });
  while (auto* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == layout::kBundles) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) || (st.st_mode & 07) == 0) continue;
    const mode_t mode = st.st_mode & 07770;
    changes.push_back(
        fmt::format("{} {}/{}: set its mode to {:04o} (a service user may traverse "
                    "the state directory)",
                    ctx.planning() ? "would change" : "changed", shown, name, mode));
    if (ctx.applying() && ::fchmodat(::dirfd(d), name.c_str(), mode, AT_SYMLINK_NOFOLLOW) != 0)
      throwSys(fmt::format("cannot set the mode of {}/{}", shown, name));
  }
}

// One directory's access: written when it differs, said either way in `changes`.
class Upkeep {
 public:
  Upkeep(Context& ctx, std::vector<std::string>& changes) : ctx_(ctx), changes_(changes) {}

  void bring(int fd, const acl::Access& now, const acl::Access& want, const std::string& shown) {
    if (now == want.normalised()) return;
    std::string what;
    for (const auto& [uid, p] : want.users)
      if (auto f = now.users.find(uid); f == now.users.end() || f->second != p)
        what += fmt::format("{}gave {} {}", what.empty() ? "" : ", ", userName(uid),
                            p == kExec ? "traverse" : "read");
    for (const auto& [uid, p] : now.users)
      if (!want.users.count(uid))
        what += fmt::format("{}revoked {}", what.empty() ? "" : ", ", userName(uid));
    if (what.empty())
      what = fmt::format("set its mode to {:o}{:o}{:o}", want.owner, want.group, want.other);
    changes_.push_back(
        fmt::format("{} {}: {}", ctx_.planning() ? "would change" : "changed", shown, what));
    if (ctx_.applying()) acl::write(fd, want, shown);
  }

 private:
  Context& ctx_;
  std::vector<std::string>& changes_;
};

}  // namespace

std::optional<uid_t> serviceUid(const decl::ProcessSpec& s) {
  auto u = s.unit.find("User");
  if (u == s.unit.end() || u->second.size() != 1 || u->second[0].empty()) return std::nullopt;
  const std::string& name = u->second[0];
  std::optional<uid_t> uid;
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long n = std::strtoul(name.c_str(), nullptr, 10);
    if (errno != 0 || n >= static_cast<unsigned long>(static_cast<uid_t>(-1))) return std::nullopt;
    uid = static_cast<uid_t>(n);
  } else {
    std::vector<char> buf(4096);
    passwd pw{}, *found = nullptr;
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found)
      uid = found->pw_uid;
  }
  if (!uid || *uid == 0 || *uid == ::geteuid()) return std::nullopt;
  return uid;
}

std::vector<std::string> keepBundleAccess(Context& ctx, const decl::Declaration& d) {
  std::map<std::string, std::set<uid_t>> perBundle;
  std::set<uid_t> users;
  for (const auto& r : d.resources) {
    if (r.kind != decl::Kind::Process) continue;
    const auto& s = std::get<decl::ProcessSpec>(r.spec);
    if (auto uid = serviceUid(s)) {
      perBundle[s.bundle.hex()].insert(*uid);
      users.insert(*uid);
    }
  }
  std::vector<std::string> changes;
  const std::string& stateShown = ctx.settings().stateDir;
  if (ctx.planning() && !lstatPath(stateShown)) return changes;  // nothing applied yet
  auto stateFd = ctx.stateDirBeneath().openDir("");
  if (!stateFd) throwSys(fmt::format("cannot open {}", stateShown));
  const acl::Access stateNow = acl::read(stateFd->get(), stateShown);
  // Entries of exactly --x on the state directory are mesh-host's (the traverse it
  // gives); any other named entry is the operator's and is left alone.
  acl::Access stateWant = stateNow;
  for (auto it = stateWant.users.begin(); it != stateWant.users.end();)
    it = it->second == kExec && !users.count(it->first) ? stateWant.users.erase(it) : std::next(it);
  for (uid_t uid : users)
    if (!(stateWant.users[uid] & kExec)) stateWant.users[uid] |= kExec;
  // Nobody given anything, nobody to take anything from: nothing below is
  // reachable by a user of ours, nothing to look at (the cost of a no-op cycle).
  if (users.empty() && stateWant == stateNow) return changes;

  Upkeep upkeep(ctx, changes);
  const std::string bundlesShown = layout::under(stateShown, layout::kBundles);
  if (auto bundles = ctx.stateDirBeneath().openDir(layout::kBundles)) {
    // Every bundle root first: revoked before the way to them is closed, given
    // before the way is opened.
    for (const auto& hex : bundleNames(bundles->get(), bundlesShown)) {
      const std::string shown = bundlesShown + "/" + hex;
      auto root = openChild(bundles->get(), hex, shown);
      if (!root) continue;
      const acl::Access now = acl::read(root->get(), shown);
      acl::Access want;
      want.owner = kAll;
      if (auto f = perBundle.find(hex); f != perBundle.end())
        for (uid_t uid : f->second) want.users[uid] = kRead | kExec;
      upkeep.bring(root->get(), now, want, shown);
    }
    const acl::Access now = acl::read(bundles->get(), bundlesShown);
    acl::Access want;
    want.owner = kAll;
    want.group = want.other = kExec;
    upkeep.bring(bundles->get(), now, want, bundlesShown);
  }
  if (!users.empty()) closeToOthers(ctx, stateFd->get(), stateShown, changes);
  upkeep.bring(stateFd->get(), stateNow, stateWant, stateShown);
  return changes;
}

}  // namespace mesh::apply
