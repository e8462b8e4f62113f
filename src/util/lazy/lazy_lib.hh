// Shared libraries that only some commands need — libcurl (HTTP blobs, etcd),
// libarchive (unpacking bundles), libsystemd (the agent's sd_notify and journal,
// the systemd backend's sd-bus and journal reading) — loaded on their first use instead of at every
// start: a one-shot `apply` or `status` does not pay for loading and relocating
// them and the ~45 libraries they bring (TLS, LDAP, Kerberos, ICU, libgcrypt…).
//
// curl.cc, archive.cc and systemd.cc define the library's functions that mesh-host
// calls, with the library's own names and signatures (checked against its header);
// each forwards to the real function, looked up on first call. Code calls the
// library as usual and does not link it.
#pragma once

namespace mesh::lazy {

// The address of `symbol` in the shared library `soname` (e.g. "libcurl.so.4"),
// loaded (once, RTLD_NOW | RTLD_LOCAL) on first use. Throws mesh::Error naming the
// library and what the loader said when it cannot be loaded or lacks the symbol.
void* symbol(const char* soname, const char* symbol);

// Whether `soname` is loaded into this process (without loading it).
bool loaded(const char* soname);

}  // namespace mesh::lazy

// Defines `ret name params` forwarding `args` to the library's own `name`, looked up
// once (a failed lookup throws, and is tried again on the next call).
#define MESH_LAZY_FORWARD(soname, ret, name, params, args)                    \
  extern "C" ret name params {                                                \
    static auto* const real =                                                 \
        reinterpret_cast<ret(*) params>(::mesh::lazy::symbol(soname, #name)); \
    return real args;                                                         \
  }
