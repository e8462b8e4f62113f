// The one page `mesh-host fleet serve` serves: HTML, CSS and JavaScript in one text, built
// into the binary (no CDN, no build step). It reads /events (server-sent events, each
// `event: fleet` carrying the `fleet status --json` object) and draws the fleet from it.
#pragma once

#include <string_view>

namespace mesh::cli {

std::string_view fleetPage();

}  // namespace mesh::cli
