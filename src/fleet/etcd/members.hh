// The members of one etcd cluster as the clients of one configuration see them. Its rules:
// the endpoint list is what the operator gave (`--etcd URL,URL,URL`, or the option
// repeated), in that order, without duplicates; every client made from copies of one
// EtcdConfig shares one Members, so a node's watch, heartbeat and reads use one member
// and move together; the member used first is picked by a hash of a name (the node's),
// so that the nodes of a fleet spread over the members instead of all using the first;
// a failed member hands over to the next one in the list, once per failure (a failure
// seen by a client that had already moved on moves nobody again); what was seen wrong
// with each member is kept for the words of the error when none can serve a call.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace mesh::fleet::etcd {

class Members {
 public:
  // `list`: one client URL or several separated by commas; each http:// or https://,
  // trailing slashes dropped. Throws InputError for an empty or malformed list.
  static std::vector<std::string> parse(const std::string& list);
  // The member a client named `spreadBy` uses first among `count`: a stable hash of the
  // name (FNV-1a), 0 for "".
  static std::size_t firstFor(const std::string& spreadBy, std::size_t count);

  Members(std::vector<std::string> urls, std::size_t first);

  std::size_t size() const { return urls_.size(); }
  const std::string& url(std::size_t i) const { return urls_[i % urls_.size()]; }
  // The member in use now.
  std::size_t current() const;
  // Member `i` failed (`why`): when it is still the one in use, the next one is; returns
  // the member in use now.
  std::size_t failed(std::size_t i, const std::string& why);
  // A call to member `i` succeeded: its last failure is forgotten.
  void succeeded(std::size_t i);
  // What was seen wrong with member `i` last ("" nothing since it last answered).
  std::string lastFailure(std::size_t i) const;

 private:
  std::vector<std::string> urls_;
  mutable std::mutex mutex_;
  std::size_t current_;
  std::vector<std::string> failures_;
};

}  // namespace mesh::fleet::etcd
