// The unit directory (--unit-dir, default /etc/systemd/system): the unit files
// mesh-host writes there, and the <target>.wants/ links that enable them so they
// start at boot — the links `systemctl enable` would make from the unit's [Install]
// WantedBy= and RequiredBy=. Plain file operations, no bus: they work while systemd
// is down, and one daemon-reload later picks up both the file and the links.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mesh::supervise::sdbus {

class UnitDir {
 public:
  explicit UnitDir(std::string dir) : dir_(std::move(dir)) {}

  // Throws Error unless `name` is a plain "<something>.service" file name.
  static void checkName(const std::string& name);

  const std::string& dir() const { return dir_; }
  std::string unitPath(const std::string& name) const { return dir_ + "/" + name; }

  // The enable links a unit text asks for, relative to the directory:
  // "multi-user.target.wants/demo.service", … Pure; tested on plain strings.
  static std::vector<std::string> enableLinks(const std::string& name, std::string_view text);

  // The unit file's text; nullopt when there is none.
  std::optional<std::string> read(const std::string& name) const;
  // True when every enable link `text` asks for is in place.
  bool enabled(const std::string& name, std::string_view text) const;

  // Writes the unit (atomically, 0644) and its enable links -> ../<name>, and drops
  // links the previous text asked for and this one does not. Only what differs is
  // written; returns true when anything changed.
  bool install(const std::string& name, std::string_view text);
  // Removes the enable links and the unit file; true when anything was there.
  bool remove(const std::string& name);

  // Units mesh-host did not install (the `service` kind). Their drop-in,
  // <dir>/<name>.d/50-mesh-host.conf: its text (nullopt: none); written
  // atomically (0644), or removed with its directory once that is empty. True
  // when anything changed.
  std::optional<std::string> readDropin(const std::string& name) const;
  bool writeDropin(const std::string& name, std::string_view text);
  bool removeDropin(const std::string& name);
  // Every link in `links` (relative to the directory) is a link.
  bool linked(const std::vector<std::string>& links) const;
  // Links `links` to `target` (the vendor's unit file, absolute, as systemctl
  // enable writes them), or removes them (only links). True when anything changed.
  bool link(const std::vector<std::string>& links, const std::string& target);
  bool unlink(const std::vector<std::string>& links);

 private:
  std::string dir_;
};

}  // namespace mesh::supervise::sdbus
