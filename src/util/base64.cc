#include "util/base64.hh"

#include <sodium.h>

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

bool base64Decode(std::string_view text, unsigned char* out, size_t size) {
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out, size, text.data(), text.size(), nullptr, &len, &end, kVariant) != 0)
    return false;
  return len == size && end == text.data() + text.size();
}

}  // namespace mesh
