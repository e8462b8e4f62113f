#include "apply/kinds/cause_text.hh"

#include <fmt/format.h>

namespace mesh::apply {

std::string causeText(const std::string& self, const RestartCauses& c) {
  std::string out;
  auto add = [&out](std::string part) {
    if (!part.empty()) out += (out.empty() ? "" : "; ") + part;
  };
  auto list = [](const char* prefix, const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& x : ids) s += (s.empty() ? prefix : ", ") + x;
    return s;
  };
  auto owed = [&self](const char* prefix,
                      const std::vector<std::pair<std::string, int64_t>>& rows) {
    std::string s;
    for (const auto& [cause, cycle] : rows)
      s += fmt::format("{}{} (cycle {})", s.empty() ? prefix : ", ",
                       cause == self ? "own unit" : cause, cycle);
    return s;
  };
  add(list("restart-on ", c.changed));
  add(list("reload-on ", c.reloadChanged));
  add(owed("owed restart: ", c.owed));
  add(owed("owed reload: ", c.owedReload));
  return out;
}

}  // namespace mesh::apply
