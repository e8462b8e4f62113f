// libsystemd's functions mesh-host calls (sd_notify and the journal for the agent,
// sd-bus and reading the journal for the systemd backend), loaded on first use
// (lazy_lib.hh).
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include <cstdarg>

#include "util/lazy/lazy_lib.hh"

namespace {
constexpr const char* kSystemd = "libsystemd.so.0";
using Bus = sd_bus;
using Msg = sd_bus_message;
using Err = sd_bus_error;

template <typename F>
F* real(const char* name) {
  return reinterpret_cast<F*>(::mesh::lazy::symbol(kSystemd, name));
}
}  // namespace

// sd-daemon, sd-journal.
MESH_LAZY_FORWARD(kSystemd, int, sd_notify, (int unset, const char* state), (unset, state))
MESH_LAZY_FORWARD(kSystemd, int, sd_watchdog_enabled, (int unset, uint64_t* usec), (unset, usec))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_sendv_with_location,
                  (const char* file, const char* line, const char* func, const struct iovec* iov,
                   int n),
                  (file, line, func, iov, n))
// Reading the journal: a failed service's last line of output, and how it ended.
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_open, (sd_journal * *ret, int flags), (ret, flags))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_open_directory,
                  (sd_journal * *ret, const char* path, int flags), (ret, path, flags))
MESH_LAZY_FORWARD(kSystemd, void, sd_journal_close, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_add_match, (sd_journal * j, const void* data, size_t n),
                  (j, data, n))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_add_disjunction, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_seek_tail, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_get_realtime_usec, (sd_journal * j, uint64_t* usec),
                  (j, usec))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_previous, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_next, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_seek_realtime_usec, (sd_journal * j, uint64_t usec),
                  (j, usec))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_get_data,
                  (sd_journal * j, const char* field, const void** data, size_t* n),
                  (j, field, data, n))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_get_fd, (sd_journal * j), (j))
MESH_LAZY_FORWARD(kSystemd, int, sd_journal_wait, (sd_journal * j, uint64_t usec), (j, usec))

// sd-bus.
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_new, (Bus * *ret), (ret))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_open_system, (Bus * *ret), (ret))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_set_address, (Bus * b, const char* a), (b, a))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_set_bus_client, (Bus * b, int on), (b, on))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_start, (Bus * b), (b))
MESH_LAZY_FORWARD(kSystemd, Bus*, sd_bus_flush_close_unref, (Bus * b), (b))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_process, (Bus * b, Msg** r), (b, r))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_wait, (Bus * b, uint64_t usec), (b, usec))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_message_new_method_call,
                  (Bus * b, Msg** m, const char* dest, const char* path, const char* iface,
                   const char* member),
                  (b, m, dest, path, iface, member))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_call,
                  (Bus * b, Msg* m, uint64_t usec, Err* error, Msg** reply),
                  (b, m, usec, error, reply))
MESH_LAZY_FORWARD(kSystemd, Msg*, sd_bus_message_unref, (Msg * m), (m))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_message_enter_container,
                  (Msg * m, char type, const char* contents), (m, type, contents))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_message_append_strv, (Msg * m, char** l), (m, l))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_match_signal,
                  (Bus * b, sd_bus_slot** slot, const char* sender, const char* path,
                   const char* iface, const char* member, sd_bus_message_handler_t callback,
                   void* userdata),
                  (b, slot, sender, path, iface, member, callback, userdata))
MESH_LAZY_FORWARD(kSystemd, sd_bus_slot*, sd_bus_slot_unref, (sd_bus_slot * s), (s))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_get_property_trivial,
                  (Bus * b, const char* dest, const char* path, const char* iface,
                   const char* member, Err* error, char type, void* out),
                  (b, dest, path, iface, member, error, type, out))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_get_property,
                  (Bus * b, const char* dest, const char* path, const char* iface,
                   const char* member, Err* error, Msg** reply, const char* type),
                  (b, dest, path, iface, member, error, reply, type))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_message_read_array,
                  (Msg * m, char type, const void** ptr, size_t* size), (m, type, ptr, size))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_get_property_string,
                  (Bus * b, const char* dest, const char* path, const char* iface,
                   const char* member, Err* error, char** out),
                  (b, dest, path, iface, member, error, out))
MESH_LAZY_FORWARD(kSystemd, int, sd_bus_error_is_set, (const Err* e), (e))
MESH_LAZY_FORWARD(kSystemd, void, sd_bus_error_free, (Err * e), (e))

// The variadic two, through their va_list forms.
extern "C" int sd_bus_message_read(Msg* m, const char* types, ...) {
  static auto* const f = real<int(Msg*, const char*, va_list)>("sd_bus_message_readv");
  va_list ap;
  va_start(ap, types);
  const int rc = f(m, types, ap);
  va_end(ap);
  return rc;
}

extern "C" int sd_bus_call_method(Bus* b, const char* dest, const char* path, const char* iface,
                                  const char* member, Err* error, Msg** reply, const char* types,
                                  ...) {
  static auto* const f = real<int(Bus*, const char*, const char*, const char*, const char*, Err*,
                                  Msg**, const char*, va_list)>("sd_bus_call_methodv");
  va_list ap;
  va_start(ap, types);
  const int rc = f(b, dest, path, iface, member, error, reply, types, ap);
  va_end(ap);
  return rc;
}
