// How far work measured in bytes has got (a bundle's download, its unpacking): what
// it is ("downloading sha256:9f2c…", "unpacking /opt/app"), bytes done, bytes in all
// (0 when not known yet). Called often; the receiver decides what to show (the CLI's
// progress line on a terminal), and an empty function means nobody is watching.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace mesh {

using ByteProgress = std::function<void(std::string_view what, uint64_t done, uint64_t total)>;

}  // namespace mesh
