// Declaration bodies in etcd, stored once by digest (FleetKeys::body) and read back by
// the node that takes a statement naming them. etcd refuses a request over its limit
// (kEtcdMaxRequestBytes, 1.5 MiB by default), so a body over kBodyChunkBytes is stored
// in chunks of at most kBodyChunkBytes each, written before a small manifest at the
// body's own key, and the manifest before any statement names it:
//
//   /mesh/<cluster>/declarations/<hex>          the bytes, or the manifest
//                                               {"type": kChunkedBodyType, "size": N,
//                                                "chunks": K}
//   /mesh/<cluster>/declarations/<hex>/000000   chunk 0 … K-1, in order
//
// A TOML declaration never starts with '{', so the two cannot be mistaken; and whoever
// acts on a body checks its bytes against the signed digest (verifyStatement) anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::fleet {

// The largest value of one body key: a chunk, with room to spare under etcd's request
// limit for the key and the request's framing.
inline constexpr std::size_t kBodyChunkBytes = 1024 * 1024;
// The largest declaration `fleet push` stores in etcd (64 chunks); larger content
// belongs in a bundle (`source =`, fetched from the blob source by digest).
inline constexpr std::size_t kMaxBodyBytes = 64 * kBodyChunkBytes;
inline constexpr std::string_view kChunkedBodyType = "mesh-host chunked body v1";

// A chunked body's manifest, the value at keys.body(digest) when the body was stored
// in chunks. nullopt: the value is no manifest (it is the body itself). Throws
// InputError naming `key` when it is one that does not add up.
struct BodyManifest {
  int64_t size = 0;
  int64_t chunks = 0;
};
std::optional<BodyManifest> decodeBodyManifest(std::string_view value, const std::string& key);

// Throws InputError naming `path` when `text` is over kMaxBodyBytes.
void checkBodySize(const std::string& path, const std::string& text);

// Stores `text`, whose digest is `digest` ("sha256:…"), at keys.body(digest): whole,
// or in chunks then the manifest. Throws InputError (nothing stored) when it is over
// kMaxBodyBytes, Error when etcd fails.
void storeBody(EtcdClient& etcd, const FleetKeys& keys, const std::string& digest,
               const std::string& text);

// The body stored for `digest`, reassembled; nullopt when it is not there (or a chunk
// the manifest lists is missing). The caller checks it against the signed digest.
// Throws InputError for a manifest that is not one, Error when etcd fails.
std::optional<std::string> readBody(EtcdClient& etcd, const FleetKeys& keys,
                                    const std::string& digest);

// Deletes every stored body, chunks included, whose digest is not in `keep` (digests
// "sha256:<hex>"); returns how many bodies it deleted. Reads keys only, never values.
std::size_t dropBodiesExcept(EtcdClient& etcd, const FleetKeys& keys,
                             const std::set<std::string>& keep);

}  // namespace mesh::fleet
