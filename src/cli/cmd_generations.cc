// `mesh-host generations` lists every declaration applied; `mesh-host rollback
// [N]` applies one of them again, as `apply` would (same output, same exit codes).
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.hh"
#include "cli/generations.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "decl/parse.hh"
#include "state/lock.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

std::optional<int64_t> currentGeneration(state::Store& store) {
  auto last = store.lastCycle();
  if (!last || last->generation == 0) return std::nullopt;
  return last->generation;
}

std::string keptText(state::Store& store, const CommonOptions& o) {
  return store.lastRetention().value_or(o.retention).generationsText();
}

decl::Declaration parseGeneration(state::Store& store, int64_t n, const CommonOptions& o,
                                  bool checkPrincipals) {
  auto g = store.generationDeclaration(n);
  if (!g && store.generationTrimmed(n))
    throw InputError(
        "generation {} was trimmed (kept: {}); `mesh-host generations` lists those kept", n,
        keptText(store, o));
  if (!g) throw InputError("there is no generation {}; `mesh-host generations` lists them", n);
  auto po = o.parseOptions(g->baseDir.empty() ? "/" : g->baseDir);
  if (checkPrincipals) {
    // getpwnam/getgrnam: a CLI runs single-threaded here.
    po.userExists = [](const std::string& name) { return ::getpwnam(name.c_str()) != nullptr; };
    po.groupExists = [](const std::string& name) { return ::getgrnam(name.c_str()) != nullptr; };
  }
  const std::string source = fmt::format(
      "generation {} ({})", n, g->source.empty() ? std::string("declaration") : g->source);
  return decl::parseDeclaration(g->text, source, po);
}

void RollbackOptions::addTo(CLI::App& cmd) {
  cmd.add_option("N", generation, "the generation to apply again")
      ->check(CLI::PositiveNumber)
      ->default_str("the one before the current");
  cmd.add_option("--metrics", metrics,
                 "write node_exporter textfile metrics to FILE after the cycle (atomically)")
      ->option_text("FILE");
  exitCodes.addTo(cmd);
  cmd.add_flag("--force", force,
               "apply even while mesh-host pause is in force (refused otherwise: exit 5, nothing "
               "applied); the pause stays");
}

namespace {

// "converged in cycle 12", "3 failed in cycle 12" or "never finished a cycle".
std::string healthText(const state::Generation& g) {
  if (g.lastCycle == 0) return "never finished a cycle";
  if (g.lastFailed == 0) return fmt::format("converged in cycle {}", g.lastCycle);
  return fmt::format("{} failed in cycle {}", g.lastFailed, g.lastCycle);
}

const char* healthName(const state::Generation& g) {
  if (g.lastCycle == 0) return "unfinished";
  return g.lastFailed == 0 ? "converged" : "failed";
}

}  // namespace

int runGenerations(CommonOptions& o) {
  o.resolve();
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  const auto current = currentGeneration(store);
  const auto all = store.generations();
  // Numbers are never reused: every number below the newest that is missing was trimmed.
  const int64_t trimmed =
      all.empty() ? 0 : all.back().generation - static_cast<int64_t>(all.size());
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& g : all)
      list.push_back({{"generation", g.generation},
                      {"digest", g.digest},
                      {"first_applied_at", isoTime(g.firstAppliedAt)},
                      {"last_applied_at", isoTime(g.lastAppliedAt)},
                      {"source", g.source},
                      // How its newest finished cycle ended: converged, failed or
                      // unfinished (none finished); only a converged one is good.
                      {"health", healthName(g)},
                      {"good", g.good()},
                      {"last_cycle", g.lastCycle},
                      {"last_failed", g.lastFailed},
                      {"current", current == g.generation}});
    nlohmann::json out = {{"schema", kJsonSchema},
                          {"node", o.node},
                          {"current", current ? nlohmann::json(*current) : nlohmann::json()},
                          {"generations", std::move(list)},
                          {"trimmed", trimmed},
                          {"kept", keptText(store, o)}};
    std::puts(jsonOut(out).c_str());
    return kExitOk;
  }
  if (all.empty()) std::puts("no generation yet: no declaration has been applied");
  if (trimmed > 0)
    printLine(fmt::format("{} older generation(s) trimmed, {} the oldest kept (kept: {})", trimmed,
                          all.front().generation, keptText(store, o)));
  for (const auto& g : all)
    printLine(fmt::format(
        "{} {:>4}  {}  first applied {}  last applied {}  {}  {}{}{}",
        current == g.generation ? "*" : " ", g.generation, g.digest.substr(0, 19),
        isoTime(g.firstAppliedAt), isoTime(g.lastAppliedAt), g.source.empty() ? "-" : g.source,
        g.good() ? "" : "FAILED: ", healthText(g), current == g.generation ? "  (current)" : ""));
  return kExitOk;
}

int runRollback(CommonOptions& o, const RollbackOptions& r) {
  o.resolve();
  const state::StateDir dir{o.stateDir};
  if (!dir.hasStore())
    throw InputError("no state store at {} yet: there is nothing to roll back to", dir.store());
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  auto store = state::Store::open(o.stateDir);
  const auto current = currentGeneration(store);
  int64_t target = r.generation;
  if (target == 0) {
    if (!current) throw InputError("no cycle has applied a declaration yet: nothing to roll back");
    // The newest good generation before the current: never one whose last cycle
    // failed or never finished (`generations` marks them; name one to force it).
    int64_t skipped = 0;
    for (const auto& g : store.generations()) {
      if (g.generation >= *current) continue;
      if (g.good())
        target = g.generation;
      else
        ++skipped;
    }
    if (target == 0 && skipped == 0 && store.generationTrimmed(*current - 1))
      throw InputError(
          "no generation before {} is kept: they were trimmed (kept: {}); there is none to roll "
          "back to",
          *current, keptText(store, o));
    if (target == 0 && skipped == 0)
      throw InputError("generation {} is the first one: there is none before it to roll back to",
                       *current);
    if (target == 0)
      throw InputError(
          "no generation before {} converged: the {} before it failed or never finished a cycle "
          "(see `mesh-host generations`); name one to apply it anyway: mesh-host rollback N",
          *current, skipped);
  }
  const auto declaration = parseGeneration(store, target, o, /*checkPrincipals=*/true);
  if (auto refused = refuseWhilePaused(o, "rollback", r.force)) return *refused;
  if (!o.json)
    printLine(fmt::format("rollback: applying generation {} (current: {})", target,
                          current ? std::to_string(*current) : "none"));
  o.rollback = true;
  return applyAndReport(declaration, o, store, r.metrics, r.exitCodes, r.force);
}

}  // namespace mesh::cli
