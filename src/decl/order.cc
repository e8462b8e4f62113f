#include "decl/order.hh"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string_view>
#include <tuple>

namespace mesh::decl {

namespace {

enum class Why { Requires, RestartOn, ReloadOn, Parent };

// An ordering edge: the resource owning the edge comes after `before`.
struct Edge {
  size_t before;
  Why why;
};

using Graph = std::vector<std::vector<Edge>>;

// Position i takes items[order[i]] (`order` a permutation, spent): each cycle of the
// permutation in turn, every item moved once, no second array.
template <class T>
void permute(std::vector<T>& items, std::vector<uint32_t>& order) {
  for (size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    T held = std::move(items[start]);
    size_t at = start;
    while (order[at] != start) {
      const size_t from = order[at];
      items[at] = std::move(items[from]);
      order[at] = static_cast<uint32_t>(at);
      at = from;
    }
    items[at] = std::move(held);
    order[at] = static_cast<uint32_t>(at);
  }
}

bool textually(const Resource& a, const Resource& b) {
  return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
}

Graph buildGraph(const std::vector<Resource>& drafts) {
  std::map<std::string_view, size_t> byId, directories;  // views of the resources' own
  for (size_t i = 0; i < drafts.size(); ++i) {
    const Resource& r = drafts[i];
    byId.emplace(r.id, i);
    if (r.kind == Kind::Directory && !r.path().empty()) directories.emplace(r.path(), i);
  }
  Graph graph(drafts.size());
  for (size_t i = 0; i < drafts.size(); ++i) {
    const Resource& r = drafts[i];
    for (const auto& id : r.requires_) graph[i].push_back({byId.at(id), Why::Requires});
    for (const auto& id : r.restartOn) graph[i].push_back({byId.at(id), Why::RestartOn});
    for (const auto& id : r.reloadOn) graph[i].push_back({byId.at(id), Why::ReloadOn});
    // Every declared directory above this path must exist first.
    std::string_view path = r.path();
    for (size_t slash; !path.empty() && (slash = path.rfind('/')) != 0;) {
      path = path.substr(0, slash);
      if (auto it = directories.find(path); it != directories.end())
        graph[i].push_back({it->second, Why::Parent});
    }
  }
  return graph;
}

// Strongly connected components (Tarjan); every one with more than one member
// holds a cycle. Recursion depth is bounded by the number of resources.
std::vector<std::vector<size_t>> cyclicComponents(const Graph& graph) {
  size_t n = graph.size(), counter = 0;
  std::vector<size_t> index(n, SIZE_MAX), low(n, 0), stack;
  std::vector<bool> onStack(n, false);
  std::vector<std::vector<size_t>> out;
  std::function<void(size_t)> visit = [&](size_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    onStack[v] = true;
    for (const Edge& e : graph[v]) {
      if (index[e.before] == SIZE_MAX) {
        visit(e.before);
        low[v] = std::min(low[v], low[e.before]);
      } else if (onStack[e.before]) {
        low[v] = std::min(low[v], index[e.before]);
      }
    }
    if (low[v] != index[v]) return;
    std::vector<size_t> component;
    size_t w;
    do {
      w = stack.back();
      stack.pop_back();
      onStack[w] = false;
      component.push_back(w);
    } while (w != v);
    if (component.size() > 1) out.push_back(std::move(component));
  };
  for (size_t v = 0; v < n; ++v)
    if (index[v] == SIZE_MAX) visit(v);
  return out;
}

// The shortest cycle through the component's first-declared member, as
// "a.x -> a.y -> a.x", with a note for each edge that is not a plain requires.
void reportCycle(std::vector<size_t> component, const Graph& graph,
                 const std::vector<Resource>& drafts, Diagnostics& diags) {
  std::sort(component.begin(), component.end());
  size_t start = component.front();
  auto inComponent = [&](size_t v) {
    return std::binary_search(component.begin(), component.end(), v);
  };
  std::map<size_t, std::pair<size_t, Why>> cameFrom;  // node -> (previous node, edge)
  std::queue<size_t> queue;
  queue.push(start);
  bool closed = false;
  while (!queue.empty() && !closed) {
    size_t v = queue.front();
    queue.pop();
    for (const Edge& e : graph[v]) {
      if (!inComponent(e.before) || cameFrom.count(e.before)) continue;
      cameFrom[e.before] = {v, e.why};
      if (e.before == start) {
        closed = true;
        break;
      }
      queue.push(e.before);
    }
  }
  // Walk back from start to start, then reverse into requires order.
  std::vector<std::pair<size_t, Why>> steps;  // (from, why) for the edge from -> next
  for (size_t v = start;;) {
    auto [previous, why] = cameFrom.at(v);
    steps.emplace_back(previous, why);
    v = previous;
    if (v == start) break;
  }
  std::reverse(steps.begin(), steps.end());
  std::vector<std::string> names, notes;
  for (size_t k = 0; k < steps.size(); ++k) {
    const auto& [from, why] = steps[k];
    const std::string& fromId = drafts[from].id;
    const std::string& toId = drafts[steps[(k + 1) % steps.size()].first].id;
    names.push_back(fromId);
    if (why == Why::RestartOn) notes.push_back(fmt::format("{} restarts on {}", fromId, toId));
    if (why == Why::ReloadOn) notes.push_back(fmt::format("{} reloads on {}", fromId, toId));
    if (why == Why::Parent) notes.push_back(fmt::format("{} is inside directory {}", fromId, toId));
  }
  names.push_back(drafts[start].id);
  std::string noteText = notes.empty() ? "" : fmt::format(" ({})", fmt::join(notes, "; "));
  diags.error(drafts[start].pos,
              fmt::format("dependency cycle: {}{}; remove one of these dependencies",
                          fmt::join(names, " -> "), noteText));
}

}  // namespace

void inTextualOrder(Drafts& drafts) {
  const auto& r = drafts.resources;
  if (std::is_sorted(r.begin(), r.end(), textually)) return;  // read a piece at a time
  std::vector<uint32_t> order(drafts.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return textually(r[a], r[b]); });
  std::vector<uint32_t> again = order;
  permute(drafts.resources, order);
  permute(drafts.sides, again);
}

std::vector<Resource> applyOrder(std::vector<Resource> resources, Diagnostics& diags) {
  Graph graph = buildGraph(resources);
  auto cycles = cyclicComponents(graph);
  for (auto& component : cycles) reportCycle(std::move(component), graph, resources, diags);
  if (!cycles.empty()) return resources;

  // Kahn's algorithm, always taking the first-declared ready resource.
  std::vector<uint32_t> waitingOn(resources.size(), 0);
  std::vector<std::vector<uint32_t>> after(resources.size());
  for (size_t i = 0; i < graph.size(); ++i)
    for (const Edge& e : graph[i]) {
      ++waitingOn[i];
      after[e.before].push_back(static_cast<uint32_t>(i));
    }
  graph = {};
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < resources.size(); ++i)
    if (waitingOn[i] == 0) ready.push(i);
  std::vector<uint32_t> order;
  order.reserve(resources.size());
  while (!ready.empty()) {
    const uint32_t v = ready.top();
    ready.pop();
    order.push_back(v);
    for (uint32_t next : after[v])
      if (--waitingOn[next] == 0) ready.push(next);
  }
  permute(resources, order);
  return resources;
}

}  // namespace mesh::decl
