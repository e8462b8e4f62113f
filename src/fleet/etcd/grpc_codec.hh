// The gRPC range codec: etcd's KV/Range request and answer in protocol buffers' wire
// format, written and read by hand for the few fields a range needs (etcd's rpc.proto
// and kv.proto: RangeRequest{key = 1, range_end = 2}; RangeResponse{header = 1
// {cluster_id = 1, revision = 3}, kvs = 2 {key = 1, create_revision = 2,
// mod_revision = 3, value = 5, lease = 6}}), each framed as gRPC's one message (a flag
// byte, 0: not compressed, and the length, 4 bytes big-endian). Its rules: other fields
// are skipped by their wire type; anything malformed, a compressed frame, or bytes
// beyond the frame's length makes the answer not whole; an answer is taken only when it
// is whole — a cut answer is never a shorter range. Nothing here does I/O;
// grpc_range.hh makes the call. Held to libprotobuf's own encodings, cut at every byte,
// by tests/unit/fleet/grpc_range_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fleet/etcd.hh"

namespace mesh::fleet::etcd {

// The framed RangeRequest for [key, rangeEnd).
std::string rangeRequest(const std::string& key, const std::string& rangeEnd);

// A RangeResponse read as it arrives: each field is read into `out` as soon as all its
// bytes are in, so the answer (tens of MB at 10,000 nodes) is read while etcd still
// sends it, and is never held whole a second time.
class RangeStream {
 public:
  // `onKv` (may be null or empty) is shown each key-value as it is read; what it throws
  // is swallowed (this runs inside libcurl's C frames).
  explicit RangeStream(const EtcdClient::KvObserver* onKv) : onKv_(onKv) {}
  // The bytes of the answer's body, in the order they came.
  void feed(std::string_view data);
  // Whether the body was one whole, well-formed message of the frame's length: then
  // `out` is the range and `clusterId` the header's.
  bool whole() const {
    return ok_ && framed_ && pending_.empty() && read_ == length_ && received_ == 5 + length_;
  }
  EtcdRange out;
  std::uint64_t clusterId = 0;

 private:
  bool readHeader(std::string_view msg);
  bool readKv(std::string_view msg);
  const EtcdClient::KvObserver* onKv_;
  std::string pending_;  // bytes in, not yet read: at most part of one field
  std::uint64_t length_ = 0, read_ = 0, received_ = 0;
  bool framed_ = false, ok_ = true;
};

}  // namespace mesh::fleet::etcd
