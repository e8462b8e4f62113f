#include "supervise/systemd/bus.hh"

#include <cstring>

namespace mesh::supervise::sdbus {

void CallError::raise(int r) const {
  if (sd_bus_error_is_set(&e_)) {
    std::string message = e_.message ? e_.message : e_.name;
    throw BusError(e_.name, message);
  }
  throw BusError("", std::strerror(-r));
}

int check(int r, const char* what) {
  if (r < 0) throw BusError("", fmt::format("{}: {}", what, std::strerror(-r)));
  return r;
}

}  // namespace mesh::supervise::sdbus
