// Times as the CLI prints them: UTC, ISO 8601, to the second (util/time_text.hh).
#pragma once

#include "util/time_text.hh"

namespace mesh::cli {

using ::mesh::agoText;
using ::mesh::isoTime;

}  // namespace mesh::cli
