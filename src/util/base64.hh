// Base64 (RFC 4648, with padding), the program's one helper: keys, signatures,
// sealed values and etcd's JSON gateway all use it. Built on libsodium's codec,
// which is constant-time, so secrets (a node key's seed) may pass through it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mesh {

std::string base64Encode(const void* data, size_t size);
inline std::string base64Encode(std::string_view bytes) {
  return base64Encode(bytes.data(), bytes.size());
}

// The bytes `text` encodes; nullopt unless all of it is base64 (characters in
// `ignore`, e.g. " \t\r\n", skipped).
std::optional<std::string> base64Decode(std::string_view text, const char* ignore = nullptr);

// As base64Decode(text) (no characters skipped), table-driven and several times faster,
// but NOT constant-time: only for bytes that are no secret (etcd's gateway answers, where
// tens of MB of keys and values arrive base64-encoded).
std::optional<std::string> base64DecodePublic(std::string_view text);

// Exactly `size` bytes into `out`; false unless all of `text` is base64 of that many.
bool base64Decode(std::string_view text, unsigned char* out, size_t size);

}  // namespace mesh
