// The pages `mesh-host fleet serve` serves: HTML, CSS and JavaScript in one text each,
// built into the binary (no CDN, no build step). The fleet page reads /events
// (server-sent events, each `event: fleet` carrying the `fleet status --json` object) and
// draws the fleet from it; a node's page (node?name=NODE) reads /api/node?name=NODE, again
// on each event, and draws that node.
#pragma once

#include <string>
#include <string_view>

namespace mesh::cli {

std::string_view fleetPage();
std::string nodePage();  // serve_node_page.cc

// What both pages share: the style sheet's text, and the script's helpers (el, ago, …).
std::string_view pageStyle();
std::string_view pageHelpers();

}  // namespace mesh::cli
