// Renders a process's `unit` table into systemd unit text: sorted keys, one line
// per value, `{bundle}` expanded to the unpacked bundle's directory and `{root}`
// to --root ("" for "/"), so a simulated node's service finds its files. The same
// text is what the want covers, what the backend installs, and what observation
// compares with the installed unit. Pure: tested on plain values.
#pragma once

#include <string>

#include "decl/model.hh"
#include "supervise/supervisor.hh"

namespace mesh::apply {

supervise::Unit renderUnit(const std::string& id, const decl::ProcessSpec& spec,
                           const std::string& bundleDir, const std::string& root);

}  // namespace mesh::apply
