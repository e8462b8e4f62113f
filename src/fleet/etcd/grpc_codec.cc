#include "fleet/etcd/grpc_codec.hh"

#include <cstddef>

namespace mesh::fleet::etcd {

namespace {

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void bytesField(std::string& out, unsigned field, std::string_view bytes) {
  varint(out, field << 3 | 2);
  varint(out, bytes.size());
  out.append(bytes);
}

// Reads one message's fields; `ok` turns false at anything malformed.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool more() const { return ok && at_ < end_; }
  size_t left() const { return static_cast<size_t>(end_ - at_); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= end_) break;
      const auto b = static_cast<unsigned char>(*at_++);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    ok = false;
    return 0;
  }
  std::string_view bytes() {
    const auto n = varint();
    if (!ok || n > static_cast<std::uint64_t>(end_ - at_)) {
      ok = false;
      return {};
    }
    std::string_view out(at_, n);
    at_ += n;
    return out;
  }
  // The next field: its number, and its value as a number (varint) or bytes
  // (length-delimited); other wire types are skipped.
  bool next(unsigned& field, std::uint64_t& number, std::string_view& data) {
    const auto tag = varint();
    field = static_cast<unsigned>(tag >> 3);
    switch (tag & 7) {
      case 0:
        number = varint();
        break;
      case 2:
        data = bytes();
        break;
      case 1:
        skip(8);
        break;
      case 5:
        skip(4);
        break;
      default:
        ok = false;
    }
    return ok;
  }
  bool ok = true;

 private:
  void skip(size_t n) {
    if (n > static_cast<size_t>(end_ - at_))
      ok = false;
    else
      at_ += n;
  }
  const char* at_;
  const char* end_;
};

// Whether `rest` begins with a whole field (tag, and for bytes their length and all of
// them); a malformed start counts as whole, for next() to reject.
bool complete(std::string_view rest) {
  Reader r(rest);
  const auto tag = r.varint();
  if (!r.ok) return rest.size() >= 10;
  switch (tag & 7) {
    case 0:
      r.varint();
      return r.ok || rest.size() >= 20;
    case 1:
      return r.left() >= 8;
    case 5:
      return r.left() >= 4;
    case 2: {
      const auto n = r.varint();
      if (!r.ok) return rest.size() >= 20;
      return r.left() >= n;
    }
    default:
      return true;
  }
}

}  // namespace

std::string rangeRequest(const std::string& key, const std::string& rangeEnd) {
  std::string msg;
  bytesField(msg, 1, key);
  bytesField(msg, 2, rangeEnd);
  std::string out(5, '\0');
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>(msg.size() >> (24 - 8 * i));
  return out + msg;
}

void RangeStream::feed(std::string_view data) {
  received_ += data.size();
  if (!ok_) return;
  pending_.append(data);
  size_t at = 0;
  if (!framed_) {
    if (pending_.size() < 5) return;
    if (pending_[0] != 0) ok_ = false;  // compressed, or not gRPC
    for (int i = 1; i < 5; ++i) length_ = length_ << 8 | static_cast<unsigned char>(pending_[i]);
    framed_ = true;
    at = 5;
  }
  while (ok_ && at < pending_.size()) {
    const std::string_view rest = std::string_view(pending_).substr(at);
    Reader r(rest);
    unsigned field = 0;
    std::uint64_t n = 0;
    std::string_view b;
    // A field whose bytes are not all in yet is read when they are.
    if (!complete(rest)) break;
    if (!r.next(field, n, b)) {
      ok_ = false;
      break;
    }
    const size_t used = rest.size() - r.left();
    if (field == 1 || field == 2) ok_ = field == 1 ? readHeader(b) : readKv(b);
    at += used;
    read_ += used;
    if (read_ > length_) ok_ = false;
  }
  pending_.erase(0, at);
}
bool RangeStream::readHeader(std::string_view msg) {
  Reader h(msg);
  unsigned field = 0;
  std::uint64_t n = 0;
  std::string_view b;
  while (h.more() && h.next(field, n, b))
    if (field == 1)
      clusterId = n;
    else if (field == 3)
      out.revision = static_cast<std::int64_t>(n);
  return h.ok;
}
bool RangeStream::readKv(std::string_view msg) {
  Reader k(msg);
  unsigned field = 0;
  std::uint64_t n = 0;
  std::string_view b;
  EtcdKeyValue kv;
  while (k.more() && k.next(field, n, b)) switch (field) {
      case 1:
        kv.key = b;
        break;
      case 2:
        kv.createRevision = static_cast<std::int64_t>(n);
        break;
      case 3:
        kv.modRevision = static_cast<std::int64_t>(n);
        break;
      case 5:
        kv.value = b;
        break;
      case 6:
        kv.lease = static_cast<std::int64_t>(n);
        break;
      default:
        break;
    }
  if (!k.ok) return false;
  if (onKv_ && *onKv_) try {  // never through libcurl's C frames
      (*onKv_)(kv);
    } catch (...) {
    }
  out.kvs.push_back(std::move(kv));
  return true;
}

}  // namespace mesh::fleet::etcd
