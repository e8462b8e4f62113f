// The versions of a judged fleet (fleet/view.hh): how many nodes apply each declaration,
// and who pushed it, by the newest statement that names it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleet/statement.hh"
#include "fleet/view.hh"
#include "trust/operator_key.hh"
#include "util/error.hh"

namespace mesh::fleet {

using VersionKey = std::pair<std::string, std::optional<int64_t>>;  // digest, serial

// Who pushed each (digest, serial): the newest statement naming it (of equally new ones,
// the last noted). Only that statement's signature is checked, once, in fill(): a fleet
// pushed node by node holds as many statements as nodes, and checking each newer one met
// on the way would cost a signature per node.
class PushedBy {
 public:
  explicit PushedBy(const std::vector<trust::OperatorPublicKey>& trusted) : trusted_(trusted) {}

  void note(const PushedDeclaration& p, const Statement& st, const std::string& where) {
    auto& best = by_[{st.declarationDigest, st.serial}];
    if (best.pushed && best.statement->pushedAtMs > st.pushedAtMs) return;
    best = {&p, &st, &where};
  }

  void fill(VersionView& v) const {
    if (v.digest.empty()) return;
    const auto it = by_.find({v.digest, v.serial});
    if (it == by_.end()) return;
    v.pushedBy = it->second.statement->pushedBy;
    v.pushedAtMs = it->second.statement->pushedAtMs;
    v.pushedVerified = verified(*it->second.pushed, *it->second.where);
  }

 private:
  // Pointers into the range and the views, which outlive this.
  struct Newest {
    const PushedDeclaration* pushed = nullptr;
    const Statement* statement = nullptr;
    const std::string* where = nullptr;
  };
  bool verified(const PushedDeclaration& p, const std::string& where) const {
    try {
      verifySignedStatement(p, where, trusted_);
      return true;
    } catch (const InputError&) {
      return false;
    }
  }
  const std::vector<trust::OperatorPublicKey>& trusted_;
  std::map<VersionKey, Newest> by_;
};

std::vector<VersionView> versionsOf(const std::vector<NodeView>& views, const PushedBy& pushed);

}  // namespace mesh::fleet
