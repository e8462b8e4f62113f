// A note written in place: a page of kNotePageSize bytes, made (zeros: every block
// allocated) while there is room, then only ever overwritten, so that a note fits on
// a full disk too. A NUL first byte says "no note"; else the note's text, NUL-padded.
// The notes of why cycles cannot run (last-error.page) and of a cycle stopped on
// request (cycle-stopped.page) are such pages. Paths are under a trusted state dir.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/fd.hh"

namespace mesh::state {

inline constexpr size_t kNotePageSize = 4096;

// The page at `path`, opened for writing; made when missing (an invalid Fd when it
// cannot be: no room, a link there, …).
Fd openNotePage(const std::string& path);
// Makes the page when missing. Never throws.
void prepareNotePage(const std::string& path) noexcept;
// Writes `text` (cut to a page less one byte) in place, synced; false when it failed.
bool writeNotePage(int fd, std::string_view text);
// The note, nullopt when there is none (or no page).
std::optional<std::string> readNotePage(const std::string& path);
// No note any more: the first byte goes to NUL, written only when it holds one (a
// read and no write in the usual case). Never throws.
void clearNotePage(const std::string& path) noexcept;

}  // namespace mesh::state
