#include "agent/last_good.hh"

#include "util/error.hh"

namespace mesh::agent {

LastGoodDeclaration::Reload LastGoodDeclaration::reload() {
  Reload r;
  try {
    auto next = load_(path_);
    r.ok = true;
    r.changed = !current_ || current_->digest != next.digest;
    current_ = std::move(next);
  } catch (const Error& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace mesh::agent
