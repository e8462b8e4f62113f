// Auth: the token of a client with a user, and how etcd's answers about it are read.
// Its rules: the client authenticates (POST /v3/auth/authenticate) before its first
// request, on a connection of its own, and sends the token with every call (a header
// for the gateway, metadata for gRPC); an answer that says the token is no longer good
// (expired, etcd restarted and forgot it, the users or roles changed) throws
// AuthExpired, and the caller forgets that token, authenticates again and sends the
// request once more — never twice. An answer that says auth is on and no user was
// given gets a hint naming the flags.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "fleet/etcd.hh"
#include "util/error.hh"

namespace mesh::fleet::etcd {

// An answer that says the token is no longer good; carried to the retry.
class AuthExpired : public Error {
 public:
  using Error::Error;
};

// Whether an answer's gRPC code (-1 none) or message says the token is no longer good.
bool isAuthExpired(std::int64_t code, const std::string& message);

// What to do about an error etcd gives when auth is enabled and no user was given
// (" (etcd has auth enabled: ...)"), or "".
std::string authHint(const std::string& message);

// The token of a client with a user: shared by its unary calls and its watches (each on
// a thread of its own), so guarded by a mutex of its own.
class Auth {
 public:
  explicit Auth(const EtcdConfig& config) : config_(config) {}

  // The token to send; authenticates first (with `member`) when there is none. etcd
  // replicates a token through raft: one taken from one member serves at every other.
  std::string token(const std::string& member);
  // `used` was refused: forget it (unless another thread has renewed it already).
  void expire(const std::string& used);

 private:
  std::string authenticate(const std::string& member) const;

  EtcdConfig config_;
  std::mutex mutex_;
  std::string token_;
};

}  // namespace mesh::fleet::etcd
