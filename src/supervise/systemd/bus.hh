// A thin RAII layer over sd-bus (libsystemd): owning pointers for the bus, messages
// and match slots, an sd_bus_error that frees itself, and a mesh::Error that keeps
// the D-Bus error name so callers can tell "no such unit" from a real failure.
#pragma once

#include <systemd/sd-bus.h>

#include <memory>
#include <string>

#include "util/error.hh"

namespace mesh::supervise::sdbus {

struct BusUnref {
  void operator()(sd_bus* b) const { sd_bus_flush_close_unref(b); }
};
struct MessageUnref {
  void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
struct SlotUnref {
  void operator()(sd_bus_slot* s) const { sd_bus_slot_unref(s); }
};
using BusPtr = std::unique_ptr<sd_bus, BusUnref>;
using MessagePtr = std::unique_ptr<sd_bus_message, MessageUnref>;
using SlotPtr = std::unique_ptr<sd_bus_slot, SlotUnref>;

// A failed bus call: the message is the peer's own text (systemd's are helpful, e.g.
// "Unit demo.service not found."); name() is the D-Bus error name ("" for a local
// failure such as a lost connection).
class BusError : public Error {
 public:
  BusError(std::string name, const std::string& message) : Error(message), name_(std::move(name)) {}
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

class CallError {
 public:
  CallError() = default;
  CallError(const CallError&) = delete;
  CallError& operator=(const CallError&) = delete;
  ~CallError() { sd_bus_error_free(&e_); }
  sd_bus_error* get() { return &e_; }
  // The error for a call that returned r < 0: the peer's error when it sent one,
  // else strerror(-r).
  [[noreturn]] void raise(int r) const;

 private:
  sd_bus_error e_ = SD_BUS_ERROR_NULL;
};

// Throws BusError("", "<what>: <strerror(-r)>") when r < 0; returns r otherwise.
int check(int r, const char* what);

// Error names systemd and the bus use, for the cases we handle.
inline constexpr const char* kNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit";
inline constexpr const char* kUnknownObject = "org.freedesktop.DBus.Error.UnknownObject";

}  // namespace mesh::supervise::sdbus
