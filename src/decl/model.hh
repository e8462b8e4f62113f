// The declaration model: what an operator asks one node to hold. Plain values,
// produced by parse.hh from TOML text and validated there; nothing here does I/O.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "util/digest.hh"

namespace mesh::decl {

enum class Kind {
  File,
  Directory,
  Link,
  Archive,
  Credential,
  Process,
  Service,
  Absent,
  User,
  Group
};

// Name and lookup by name, from the kinds table (decl/kind_info.hh).
const char* kindName(Kind k);  // "file", "directory", …
std::optional<Kind> kindFromName(std::string_view name);

// The name of a declaration file, one string shared by every position in that
// file (a declaration of 50,000 resources holds it once, not 50,000 times).
using FileName = std::shared_ptr<const std::string>;

// Where something was written in a declaration, for error messages.
struct Position {
  FileName fileName;  // null: no file known ("")
  int line = 0;
  int column = 0;
  const std::string& file() const;
  std::string str() const;  // "decl.toml:12:3" (or "decl.toml" when no line is known)
};

// Owner/group as declared: a name, or a numeric id written as a string.
struct Principal {
  std::string name;
  bool operator==(const Principal&) const = default;
};

struct FileSpec {
  std::string path;                    // absolute, normalised, as on the node
  std::optional<std::string> content;  // inline content, or
  std::optional<Digest> blob;          // a blob from the blob source (exactly one of the two)
  Digest contentDigest;                // sha256 of the content: the blob's digest, or of `content`
  mode_t mode = 0644;
  std::optional<Principal> owner, group;
};

struct DirectorySpec {
  std::string path;
  mode_t mode = 0755;
  std::optional<Principal> owner, group;
};

struct LinkSpec {
  std::string path;
  std::string target;  // verbatim; may be relative
};

struct ArchiveSpec {
  std::string path;  // the directory the bundle is unpacked at
  Digest bundle;
  uint64_t maxEntries = 100000;
  uint64_t maxBytes = uint64_t{4} << 30;  // 4 GiB unpacked
  // `replace`: adopting a path that holds files mesh-host did not write deletes
  // them; otherwise the resource fails and leaves them.
  bool replace = false;
  // `keep-modes`: unpacked entries keep their group- and world-write bits;
  // otherwise those bits are dropped.
  bool keepModes = false;
};

struct CredentialSpec {
  std::string path;
  std::optional<std::string> from;    // local file (development); absolute after parsing
  std::optional<std::string> sealed;  // sealed to the node's key
  mode_t mode = 0600;
  std::optional<Principal> owner, group;
};

// A unit value: most keys take one string; some (Environment, ExecStartPre…) may
// be given as an array, which renders as one line per element.
using UnitValue = std::vector<std::string>;

// A process's declared health (`health = { exec, interval, timeout }`): a command
// the agent runs every `interval` (argv split as ExecStart is, no shell; {bundle} and
// {root} as in unit values), killed after `timeout`; exit 0 is healthy. Not part of
// the unit: changing it restarts nothing.
struct HealthCheck {
  std::string exec;
  int64_t intervalMs = 10'000;
  int64_t timeoutMs = 5'000;
  bool operator==(const HealthCheck&) const = default;
};

struct ProcessSpec {
  Digest bundle;
  std::map<std::string, UnitValue> unit;  // sorted by key
  std::string service;                    // "<module>.service" unless named
  std::optional<HealthCheck> health;      // none declared: running is healthy
};

// A unit mesh-host did not install (the distro's nginx.service): its state and
// enablement, and a drop-in mesh-host owns (<unit-dir>/<unit>.d/50-mesh-host.conf).
// Unset `running`/`enabled`: left as found. systemd only.
struct ServiceSpec {
  std::string unit;                         // "nginx.service"
  std::optional<bool> running;              // state = "running" | "stopped"
  std::optional<bool> enabled;              // enabled = true | false
  std::map<std::string, UnitValue> dropin;  // empty: no drop-in
};

// `absent`: nothing at `path` — a file, a link or an empty directory removed; a
// non-empty tree only with `recursive`.
struct AbsentSpec {
  std::string path;
  bool recursive = false;
};

// A system account (decl/accounts.hh): created with the distribution's own tools,
// no password; removed, once undeclared, only when mesh-host created it.
struct UserSpec {
  std::string name;
  std::optional<uint32_t> uid;      // unset: the tools choose
  std::optional<Principal> group;   // primary; unset: a group of the user's name
  std::vector<std::string> groups;  // supplementary: exactly these (sorted, unique)
  std::optional<std::string> home;  // unset: none (/nonexistent), never created
  std::string shell = "/usr/sbin/nologin";
  bool system = true;  // a system account's id range
};

struct GroupSpec {
  std::string name;
  std::optional<uint32_t> gid;
  bool system = true;
};

using Spec = std::variant<FileSpec, DirectorySpec, LinkSpec, ArchiveSpec, CredentialSpec,
                          ProcessSpec, ServiceSpec, AbsentSpec, UserSpec, GroupSpec>;

// `on-remove`: what becomes of a resource's path when it leaves the declaration.
// Restore (the default): what mesh-host first overwrote is put back, and what it
// created from nothing is deleted; Keep: left as it is; Delete: deleted, even
// what was there before mesh-host.
enum class OnRemove : uint8_t { Restore, Keep, Delete };
const char* onRemoveName(OnRemove o);  // "restore", "keep", "delete"

struct Resource {
  // "<module>.<name>": neither part holds a '.' (module and resource names are
  // [A-Za-z0-9_-]+), so the two are read from it rather than held apart.
  std::string id;
  Kind kind = Kind::File;
  OnRemove onRemove = OnRemove::Restore;  // (in what would be padding)
  // What it asks for, for a kind whose want is of its spec alone (decl/want.hh):
  // made once when parsed, and kept by the compiled form. None for the other
  // kinds, whose appliers make it on every cycle.
  Digest want;                         // (beside `kind`, in part in what would be padding)
  Position pos;                        // of the resource's table header
  std::vector<std::string> requires_;  // resource ids
  std::vector<std::string> restartOn;  // resource ids (process and service only)
  std::vector<std::string> reloadOn;   // resource ids (the same; none also in restartOn)
  Spec spec;

  // The managed path on the node; empty for a process.
  const std::string& path() const;
  // The service a process runs as, or a service resource drives; nullptr for
  // other kinds. Both restart (reload) on causes, through the same ledger.
  const std::string* service() const;
  // The parts of `id`, valid while it is: before its first '.' and after it.
  std::string_view module() const;
  std::string_view name() const;
};

struct Declaration {
  std::string source;               // file name as given, for messages
  std::string baseDir;              // what relative paths were resolved against (ParseOptions)
  std::optional<std::string> node;  // when declared, matches --node
  // When declared (>= 0): a node that trusts operator keys refuses a declaration
  // whose serial is lower than the highest it applied (docs/trust.md).
  std::optional<int64_t> serial;
  // `empty = true`: it declares no resources on purpose, so applying it removes
  // everything mesh-host manages on the node. A declaration with no resources
  // that does not say so is refused: an emptied file is not that request.
  bool empty = false;
  std::vector<Resource> resources;  // in apply order: requires (and implied parents) first
  Digest digest;                    // of the exact text
  std::string text;                 // the exact text (kept as a generation)
};

}  // namespace mesh::decl
