#include "util/base64.hh"

#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace mesh {

namespace {
constexpr int kVariant = sodium_base64_VARIANT_ORIGINAL;
}  // namespace

std::string base64Encode(const void* data, size_t size) {
  std::string out(sodium_base64_ENCODED_LEN(size, kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), static_cast<const unsigned char*>(data), size,
                    kVariant);
  out.resize(std::strlen(out.c_str()));  // the encoder's terminating NUL
  return out;
}

std::optional<std::string> base64Decode(std::string_view text, const char* ignore) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), ignore, &len, &end, kVariant) != 0 ||
      end != text.data() + text.size())
    return std::nullopt;
  out.resize(len);
  return out;
}

std::optional<std::string> base64DecodePublic(std::string_view text) {
  static constexpr auto kTable = [] {
    std::array<signed char, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i)
      t[static_cast<unsigned char>(alphabet[i])] = static_cast<signed char>(i);
    return t;
  }();
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out(text.size() / 4 * 3 - pad, '\0');
  size_t o = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int a = kTable[in[i]], b = kTable[in[i + 1]];
    const int c = last && pad == 2 ? 0 : kTable[in[i + 2]];
    const int d = last && pad >= 1 ? 0 : kTable[in[i + 3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    const uint32_t n = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    out[o++] = static_cast<char>(n >> 16);
    if (o < out.size()) out[o++] = static_cast<char>(n >> 8);
    if (o < out.size()) out[o++] = static_cast<char>(n);
    // Padding bits must be zero, as a canonical encoder writes them.
    if (last && ((pad == 2 && (n & 0xffff)) || (pad == 1 && (n & 0xff)))) return std::nullopt;
  }
  return out;
}

bool base64Decode(std::string_view text, unsigned char* out, size_t size) {
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out, size, text.data(), text.size(), nullptr, &len, &end, kVariant) != 0)
    return false;
  return len == size && end == text.data() + text.size();
}

}  // namespace mesh
