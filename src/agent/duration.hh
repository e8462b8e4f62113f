// Moved: durations are util's (util/duration.hh), the CLI parses them too. This header
// stays only for agent/fleet_link.cc's include, and goes when that names util/duration.hh.
#pragma once

#include "util/duration.hh"
