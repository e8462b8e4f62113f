// libarchive's functions mesh-host calls, loaded on first use (lazy_lib.hh).
#include <archive.h>
#include <archive_entry.h>

#include "util/lazy/lazy_lib.hh"

namespace {
constexpr const char* kArchive = "libarchive.so.13";
using A = struct archive;
using E = struct archive_entry;
}  // namespace

MESH_LAZY_FORWARD(kArchive, A*, archive_read_new, (void), ())
MESH_LAZY_FORWARD(kArchive, int, archive_read_free, (A * a), (a))
MESH_LAZY_FORWARD(kArchive, int, archive_read_support_filter_all, (A * a), (a))
MESH_LAZY_FORWARD(kArchive, int, archive_read_support_format_all, (A * a), (a))
MESH_LAZY_FORWARD(kArchive, int, archive_read_open_filename, (A * a, const char* f, size_t block),
                  (a, f, block))
MESH_LAZY_FORWARD(kArchive, int, archive_read_next_header, (A * a, E** e), (a, e))
MESH_LAZY_FORWARD(kArchive, int, archive_read_data_block,
                  (A * a, const void** buf, size_t* size, la_int64_t* offset),
                  (a, buf, size, offset))
MESH_LAZY_FORWARD(kArchive, la_int64_t, archive_filter_bytes, (A * a, int n), (a, n))
MESH_LAZY_FORWARD(kArchive, const char*, archive_error_string, (A * a), (a))
MESH_LAZY_FORWARD(kArchive, __LA_MODE_T, archive_entry_filetype, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, __LA_MODE_T, archive_entry_perm, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, time_t, archive_entry_mtime, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, long, archive_entry_mtime_nsec, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, int, archive_entry_mtime_is_set, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, la_int64_t, archive_entry_size, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, int, archive_entry_size_is_set, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_pathname, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_hardlink, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_symlink, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_pathname_utf8, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_hardlink_utf8, (E * e), (e))
MESH_LAZY_FORWARD(kArchive, const char*, archive_entry_symlink_utf8, (E * e), (e))
