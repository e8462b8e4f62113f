#include "decl/compiled.hh"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <variant>

#include "decl/accounts.hh"
#include "decl/compiled_codec.hh"
#include "util/digest.hh"

namespace mesh::decl {

namespace {

using form::Checksum;
using form::checksumOf;
using form::kSum;
using form::Malformed;
using form::Reader;
using form::Writer;

constexpr std::string_view kMagic = "mesh-host compiled declaration\n";
// Bump with any change of the layout in compiled_codec.hh or compiled_specs.cc
// (the build-id changes too, but a build without one relies on this).
constexpr uint64_t kFormat = 8;

// Every name the declaration gives as a user or a group (numeric ids are not looked up).
void principals(const Declaration& d, std::set<std::string>& users, std::set<std::string>& groups) {
  auto add = [](std::set<std::string>& into, const std::optional<Principal>& p) {
    if (p && !p->name.empty() &&
        !std::all_of(p->name.begin(), p->name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      into.insert(p->name);
  };
  for (const auto& r : d.resources)
    std::visit(
        [&](const auto& s) {
          if constexpr (requires { s.owner; }) {
            add(users, s.owner);
            add(groups, s.group);
          } else if constexpr (requires { s.groups; }) {
            add(groups, s.group);
            for (const auto& g : s.groups) add(groups, Principal{g});
          }
        },
        r.spec);
}

// The main program's GNU build-id note, as hex; "" when it has none.
std::string buildId() {
  std::string id;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) -> int {
        auto& hex = *static_cast<std::string*>(out);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* at = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = at + ph.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(at);
            const char* name = at + sizeof(ElfW(Nhdr));
            const char* desc = name + ((nh->n_namesz + 3) & ~3u);
            const char* next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              hex = toHex(reinterpret_cast<const unsigned char*>(desc), nh->n_descsz);
              return 1;
            }
            at = next;
          }
        }
        return 1;  // the first object is the main program: stop there
      },
      &id);
  return id;
}

}  // namespace

const std::string& binaryIdentity() {
  static const std::string identity = [] {
    std::string id = buildId();
    // Without a build-id, the version and when this file was compiled.
    return std::string("mesh-host ") + MESH_HOST_VERSION + " " +
           (id.empty() ? std::string(__DATE__ " " __TIME__) : id);
  }();
  return identity;
}

std::string compiledKey(const Digest& textDigest, const std::string& source,
                        const ParseOptions& options) {
  Writer w;
  w.s(kMagic);
  w.u(kFormat);
  w.s(binaryIdentity());
  w.s(textDigest.str());
  w.s(source);
  w.s(options.node);
  w.s(options.cluster ? "cluster:" + *options.cluster : std::string());
  w.s(options.baseDir);
  w.s(options.stateDir);
  return Digest::ofBytes(w.out()).str();
}

size_t compileDeclaration(const Declaration& d, const std::function<void(std::string_view)>& sink) {
  Checksum sum;
  size_t size = 0;
  Writer w([&](std::string_view piece) {
    size += piece.size();
    if (!sink) return;
    sum.update(piece);
    sink(piece);
  });
  w.out().append(kMagic);
  w.u(kFormat);
  form::writeDeclaration(w, d);
  w.flush();
  if (sink) sink(sum.finish());
  return size + kSum;
}

std::string compileDeclaration(const Declaration& d) {
  std::string out;
  out.reserve(compileDeclaration(d, {}));
  compileDeclaration(d, [&](std::string_view piece) { out.append(piece); });
  return out;
}

namespace {

// What the form holds is this text's, and names only users and groups that exist.
bool fits(const Declaration& d, const Digest& textDigest, const ParseOptions& options) {
  if (d.digest != textDigest) return false;
  std::set<std::string> users, groups;
  principals(d, users, groups);
  // An account declared beside is resolved when the cycle has made it.
  const auto declared = declaredAccounts(d.resources);
  for (const auto& u : users)
    if (!declared.users.count(u) && options.userExists && !options.userExists(u)) return false;
  for (const auto& g : groups)
    if (!declared.groups.count(g) && options.groupExists && !options.groupExists(g)) return false;
  return true;
}

}  // namespace

std::optional<Declaration> loadCompiled(const FormSource& form, const Digest& textDigest,
                                        const ParseOptions& options) {
  if (form.size < kMagic.size() + kSum) return std::nullopt;
  const size_t payload = form.size - kSum;
  std::string magic(kMagic.size(), '\0'), sum(kSum, '\0');
  if (!form.read(0, magic.data(), magic.size()) || magic != kMagic) return std::nullopt;
  if (!form.read(payload, sum.data(), sum.size())) return std::nullopt;
  std::optional<Declaration> d;
  Checksum hasher;
  hasher.update(magic);
  try {
    Reader r(form, kMagic.size(), payload - kMagic.size(), hasher);
    if (r.u() != kFormat) return std::nullopt;
    d = form::readDeclaration(r);
    if (!r.done()) return std::nullopt;
  } catch (const Malformed&) {
    return std::nullopt;
  }
  // Decoded as it was read: whatever it says counts only if its sum is right.
  if (hasher.finish() != sum) return std::nullopt;
  if (!fits(*d, textDigest, options)) return std::nullopt;
  return d;
}

std::optional<Declaration> loadCompiled(std::string_view form, const Digest& textDigest,
                                        const ParseOptions& options) {
  if (form.size() < kMagic.size() + kSum || !form.starts_with(kMagic)) return std::nullopt;
  const auto payload = form.substr(0, form.size() - kSum);
  if (checksumOf(payload) != form.substr(payload.size())) return std::nullopt;
  std::optional<Declaration> d;
  try {
    Reader r(payload.substr(kMagic.size()));
    if (r.u() != kFormat) return std::nullopt;
    d = form::readDeclaration(r);
    if (!r.done()) return std::nullopt;
  } catch (const Malformed&) {
    return std::nullopt;
  }
  if (!fits(*d, textDigest, options)) return std::nullopt;
  return d;
}

}  // namespace mesh::decl
