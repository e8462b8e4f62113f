#include "fleet/bodies.hh"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

namespace {

using json = nlohmann::json;

// "sha256:<hex>" of a key under bodiesPrefix(): its first component.
std::string digestOfBodyKey(const FleetKeys& keys, const std::string& key) {
  std::string rest = key.substr(keys.bodiesPrefix().size());
  return "sha256:" + rest.substr(0, rest.find('/'));
}

}  // namespace

void checkBodySize(const std::string& path, const std::string& text) {
  if (text.size() > kMaxBodyBytes)
    throw InputError(
        "declaration {} is {:.1f} MiB; fleet push stores at most {} MiB in etcd: move large "
        "content into a bundle (source = \"…\", served by the blob source) and push again",
        path, static_cast<double>(text.size()) / (1024 * 1024), kMaxBodyBytes / (1024 * 1024));
}

void storeBody(EtcdClient& etcd, const FleetKeys& keys, const std::string& digest,
               const std::string& text) {
  checkBodySize(keys.body(digest), text);
  if (text.size() <= kBodyChunkBytes) {
    etcd.put(keys.body(digest), text);
    return;
  }
  const int64_t chunks =
      static_cast<int64_t>((text.size() + kBodyChunkBytes - 1) / kBodyChunkBytes);
  for (int64_t i = 0; i < chunks; ++i)
    etcd.put(keys.bodyChunk(digest, i), text.substr(i * kBodyChunkBytes, kBodyChunkBytes));
  // Last: a reader that finds the manifest finds every chunk it lists.
  etcd.put(keys.body(digest),
           jsonData(json{{"type", kChunkedBodyType}, {"size", text.size()}, {"chunks", chunks}}));
}

std::optional<BodyManifest> decodeBodyManifest(std::string_view value, const std::string& key) {
  if (!value.starts_with('{')) return std::nullopt;
  const auto manifest = parseEtcdJson(value);
  if (!manifest.is_object()) return std::nullopt;
  const auto type = manifest.find("type");
  if (type == manifest.end() || !type->is_string() || *type != kChunkedBodyType)
    return std::nullopt;
  // A field of another type counts as missing (json::value would throw type_error).
  auto number = [&](const char* name) {
    const auto it = manifest.find(name);
    return it != manifest.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{-1};
  };
  const int64_t size = number("size"), chunks = number("chunks");
  if (size < 0 || chunks < 0 || static_cast<std::size_t>(size) > kMaxBodyBytes ||
      chunks != static_cast<int64_t>((size + kBodyChunkBytes - 1) / kBodyChunkBytes))
    throw InputError("{}: a chunked body's manifest that does not add up ({} bytes in {} chunks)",
                     key, size, chunks);
  return BodyManifest{size, chunks};
}

std::optional<std::string> readBody(EtcdClient& etcd, const FleetKeys& keys,
                                    const std::string& digest) {
  const std::string key = keys.body(digest);
  auto head = etcd.get(key);
  if (!head) return std::nullopt;
  const auto manifest = decodeBodyManifest(head->value, key);
  if (!manifest) return std::move(head->value);  // not a manifest: the digest check judges it
  const int64_t size = manifest->size, chunks = manifest->chunks;
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  for (int64_t i = 0; i < chunks; ++i) {
    auto chunk = etcd.get(keys.bodyChunk(digest, i));
    if (!chunk) return std::nullopt;
    text += chunk->value;
  }
  if (text.size() != static_cast<std::size_t>(size))
    throw InputError("{}: its chunks hold {} bytes, the manifest says {}", key, text.size(), size);
  return text;
}

std::size_t dropBodiesExcept(EtcdClient& etcd, const FleetKeys& keys,
                             const std::set<std::string>& keep) {
  std::set<std::string> drop;
  for (const auto& kv : etcd.keysUnder(keys.bodiesPrefix()).kvs) {
    auto digest = digestOfBodyKey(keys, kv.key);
    if (!keep.count(digest)) drop.insert(std::move(digest));
  }
  for (const auto& digest : drop) {
    const std::string chunks = keys.body(digest) + "/";
    etcd.txn({},
             {EtcdOp::del(keys.body(digest)), EtcdOp::del(chunks, EtcdClient::prefixEnd(chunks))});
  }
  return drop.size();
}

}  // namespace mesh::fleet
