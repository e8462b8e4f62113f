// `mesh-host gc --keep K`: trims the state store to its bounds (--keep-generations,
// --keep-cycles, --keep-days), then removes unpacked bundles (<state-dir>/bundles/<hex>)
// and blobs (<state-dir>/blobs/sha256/<hex>) that none of the K most recently
// applied generations names — and never one the current declaration uses —, and
// kept originals (<state-dir>/originals) no record or declared resource needs. Runs
// under the exclusive lock, so no cycle is fetching or unpacking meanwhile.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "apply/originals.hh"
#include "cli/commands.hh"
#include "cli/generations.hh"
#include "cli/output.hh"
#include "decl/references.hh"
#include "state/lock.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

void GcOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--keep", keep,
                 "keep what the K most recently applied good generations need, and the current one "
                 "(default 5)")
      ->check(CLI::PositiveNumber)
      ->option_text("K")
      ->default_str("5");
  cmd.add_flag("--dry-run", dryRun, "say what would be removed; remove nothing");
}

namespace {

namespace fs = std::filesystem;

bool isHex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

uint64_t sizeOf(const fs::path& p) {
  std::error_code ec;
  auto st = lstatPath(p.string());
  if (!st) return 0;
  if (!S_ISDIR(st->st_mode)) return static_cast<uint64_t>(st->st_size);
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
    if (auto s = lstatPath(it->path().string()); s && !S_ISDIR(s->st_mode))
      total += static_cast<uint64_t>(s->st_size);
  return total;
}

struct Candidate {
  std::string what;  // "bundle", "blob", "leftover"
  fs::path path;
  uint64_t bytes = 0;
};

// The leftover of an unpack cut short in <state-dir>/bundles: util/fs.hh
// tempNameFor(…, kUnpackTag), or ".<hex>.mesh-new.*" as earlier versions named it.
// Never needed, whichever bundle it was for: gc runs under the exclusive lock.
bool isLeftover(const std::string& name) {
  if (isTempName(name, kUnpackTag)) return true;
  return name.size() > 65 && name[0] == '.' && isHex64(name.substr(1, 64)) &&
         name.find(".mesh-new.") == 65;
}

// Entries of `dir` that are not kept: <hex> not in `keep`, and (for bundles)
// the leftovers of an unpack cut short.
std::vector<Candidate> candidatesIn(const std::string& dir, const std::string& what,
                                    const std::set<std::string>& keep) {
  std::vector<Candidate> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (isHex64(name)) {
      if (!keep.count(name)) out.push_back({what, e.path(), sizeOf(e.path())});
    } else if (what == "bundle" && isLeftover(name)) {
      out.push_back({"leftover", e.path(), sizeOf(e.path())});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  return out;
}

}  // namespace

int runGc(CommonOptions& o, const GcOptions& g) {
  o.resolve();
  const state::StateDir dir{o.stateDir};
  if (!dir.hasStore())
    throw InputError("no state store at {} yet: nothing to collect", dir.store());
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  // The store trimmed to its bounds at once (a cycle trims a batch at a time),
  // under the exclusive lock like a cycle's trim.
  state::TrimReport trimmed;
  if (!g.dryRun) {
    auto rw = state::Store::open(o.stateDir);
    state::Retention r = o.retention;
    r.batch = 1000;
    for (bool more = true; more;) {
      const auto t = rw.trim(r, unixNowMs());
      trimmed.cycles += t.cycles;
      trimmed.history += t.history;
      trimmed.generations += t.generations;
      trimmed.pagesFreed += t.pagesFreed;
      more = t.more;
    }
  }
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);

  // The K most recently applied good generations (a failed or never finished
  // one is not counted, so a run of broken pushes cannot push the last good
  // ones out), and the current one whatever K is.
  auto all = store.generations();
  std::erase_if(all, [](const state::Generation& x) { return !x.good(); });
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(a.lastAppliedAt, a.generation) > std::tie(b.lastAppliedAt, b.generation);
  });
  std::set<int64_t> kept;
  for (size_t i = 0; i < all.size() && static_cast<int64_t>(i) < g.keep; ++i)
    kept.insert(all[i].generation);
  if (auto current = currentGeneration(store)) kept.insert(*current);

  std::set<std::string> keep;
  for (int64_t n : kept) {
    try {
      decl::collectReferences(parseGeneration(store, n, o, /*checkPrincipals=*/false), keep);
    } catch (const Error& e) {
      printLines(fmt::format("mesh-host: warning: generation {} no longer parses ({}); keeping "
                             "every digest its text names\n",
                             n, e.what()),
                 stderr);
      if (auto text = store.generationText(n)) decl::collectReferencesFromText(*text, keep);
    }
  }

  auto candidates = candidatesIn(dir.bundles(), "bundle", keep);
  for (auto& c : candidatesIn(dir.blobs() + "/sha256", "blob", keep))
    candidates.push_back(std::move(c));
  // Kept originals (apply/originals.hh): an entry while a record or the current
  // declaration names its resource, and the bytes an entry needs.
  std::set<std::string> current;
  if (auto n = currentGeneration(store)) try {
      for (const auto& r : parseGeneration(store, *n, o, /*checkPrincipals=*/false).resources)
        current.insert(r.id);
    } catch (const Error&) {
      current.insert("");  // unknown: every entry is kept
    }
  for (const auto& path : apply::originalsUnneeded(o.stateDir, [&](const std::string& id) {
         return current.count("") || current.count(id) || store.record(id).has_value();
       }))
    candidates.push_back({"original", path, sizeOf(path)});
  uint64_t freed = 0;
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& c : candidates) {
    if (!g.dryRun) removeTree(c.path.string());
    freed += c.bytes;
    removed.push_back({{"kind", c.what}, {"path", c.path.string()}, {"bytes", c.bytes}});
    if (!o.json)
      printLine(fmt::format("{} {} {} ({} bytes)", g.dryRun ? "would remove" : "removed", c.what,
                            c.path.string(), c.bytes));
  }
  std::string keptText;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it)
    keptText += (keptText.empty() ? "" : ", ") + std::to_string(*it);
  if (o.json) {
    nlohmann::json out = {{"schema", kJsonSchema},
                          {"node", o.node},
                          {"dry_run", g.dryRun},
                          {"kept_generations", std::vector<int64_t>(kept.rbegin(), kept.rend())},
                          {"removed", std::move(removed)},
                          {"bytes_freed", freed},
                          {"trimmed",
                           {{"cycles", trimmed.cycles},
                            {"history", trimmed.history},
                            {"generations", trimmed.generations},
                            {"pages_freed", trimmed.pagesFreed}}}};
    std::puts(jsonOut(out).c_str());
  } else {
    if (trimmed.cycles + trimmed.generations > 0)
      printLine(fmt::format(
          "gc: trimmed the state store: {} cycle(s), {} history entries, {} generation(s) (kept: "
          "{}; {}), {} page(s) given back",
          trimmed.cycles, trimmed.history, trimmed.generations, o.retention.generationsText(),
          o.retention.cyclesText(), trimmed.pagesFreed));
    printLine(fmt::format("gc: {} {} item(s), {} {} bytes; kept generations: {}",
                          g.dryRun ? "would remove" : "removed", candidates.size(),
                          g.dryRun ? "would free" : "freed", freed,
                          keptText.empty() ? "none" : keptText));
  }
  return kExitOk;
}

}  // namespace mesh::cli
