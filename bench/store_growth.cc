// How the state store grows over a long life, quickly: a synthetic node whose
// agent runs a cycle every --interval seconds and whose declaration (--text-bytes
// of TOML-like text) is edited every --edit-every seconds, on compressed time (no
// waiting: the clock the store is given jumps by the interval). Each cycle writes
// what an applying cycle writes, through the store API, under the state lock: its
// generation (a new text on an edit, else the known one touched) and its row in
// one transaction, the row finished, then the trim the cycle loop runs. It prints
// the size of state.db (and -wal) as it goes; with the bounds the size levels off,
// with --no-trim it is the store before them.
//
//   build/bench/mesh_bench_store_growth [--days 365] [--interval 1] [--edit-every 30]
//       [--text-bytes 20000] [--reports 12] [--keep-generations 50] [--keep-cycles 10000]
//       [--keep-days 30] [--no-trim] [--dir DIR]
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "state/lock.hh"
#include "state/store.hh"

namespace {

int64_t fileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string mb(int64_t bytes) {
  return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6);
}

// A declaration of about `bytes`, different for each edit.
std::string declaration(int64_t edit, int64_t bytes) {
  std::string text = fmt::format("# edit {}\n", edit);
  for (int64_t i = 0; static_cast<int64_t>(text.size()) < bytes; ++i)
    text += fmt::format(
        "[module.m{0}.file.f{0}]\npath = \"/etc/app/{0}.conf\"\ncontent = \"edit {1} line {0}\"\n",
        i, edit);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mesh;
  int64_t days = 365, interval = 1, editEvery = 30, textBytes = 20000, reports = 12;
  bool trim = true;
  state::Retention retention;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> int64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--days")
      days = value();
    else if (a == "--interval")
      interval = value();
    else if (a == "--edit-every")
      editEvery = value();
    else if (a == "--text-bytes")
      textBytes = value();
    else if (a == "--reports")
      reports = value();
    else if (a == "--keep-generations")
      retention.keepGenerations = value();
    else if (a == "--keep-cycles")
      retention.keepCycles = value();
    else if (a == "--keep-days")
      retention.keepDays = value();
    else if (a == "--no-trim")
      trim = false;
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else {
      std::fprintf(stderr, "unknown option %s (see the first lines of bench/store_growth.cc)\n",
                   a.c_str());
      return 2;
    }
  }
  if (interval < 1 || editEvery < 1 || days < 1 || reports < 1) {
    std::fprintf(stderr, "--days, --interval, --edit-every and --reports must be at least 1\n");
    return 2;
  }
  const bool ownDir = dir.empty();
  if (ownDir) {
    char tmpl[] = "/tmp/mesh-store-growth-XXXXXX";
    if (!::mkdtemp(tmpl)) return 1;
    dir = tmpl;
  }
  const std::string db = dir + "/state.db";
  const int64_t cycles = days * 86400 / interval;
  const int64_t reportEvery = std::max<int64_t>(1, cycles / reports);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::printf(
      "store growth on %s: %lld cycles (%lld days, one every %lld s), an edit every %lld s, "
      "declaration ~%lld bytes; %s\n",
      host, static_cast<long long>(cycles), static_cast<long long>(days),
      static_cast<long long>(interval), static_cast<long long>(editEvery),
      static_cast<long long>(textBytes),
      trim ? fmt::format("bounds: {}; {}", retention.generationsText(), retention.cyclesText())
                 .c_str()
           : "no trimming (the store before its bounds)");
  try {
    auto lock = state::StateLock::acquire(dir, state::StateLock::Kind::Exclusive);
    auto store = state::Store::open(dir);
    const int64_t start = int64_t{1'800'000'000'000};
    int64_t edit = -1;
    std::string text, digest;
    const auto began = std::chrono::steady_clock::now();
    int64_t trimUsMax = 0;
    for (int64_t c = 1; c <= cycles; ++c) {
      const int64_t now = start + c * interval * 1000;
      if ((c * interval) / editEvery != edit) {
        edit = (c * interval) / editEvery;
        text = declaration(edit, textBytes);
        digest = fmt::format("sha256:{:064x}", edit);
      }
      int64_t generation = 0, cycle = 0;
      {
        state::Store::Txn txn(store);
        generation = store.recordGeneration(digest, text, now, "/etc/mesh-host/declaration.toml");
        cycle = store.beginCycle(now, generation, "bench");
        txn.commit();
      }
      state::Cycle done;
      done.cycle = cycle;
      done.startedAt = now;
      done.finishedAt = now + 5;
      done.generation = generation;
      done.tally.unchanged = 100;
      done.ms = 5;
      store.finishCycle(done);
      if (trim) {
        const auto t0 = std::chrono::steady_clock::now();
        (void)store.trim(retention, now);
        trimUsMax =
            std::max<int64_t>(trimUsMax, std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count());
      }
      if (c % reportEvery == 0 || c == cycles) {
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        std::printf(
            "cycle %9lld  day %6.1f  state.db %10s  -wal %9s  generations %6lld  cycles %8lld  "
            "(%.0f s, %.0f cycles/s, slowest trim %lld us)\n",
            static_cast<long long>(c), static_cast<double>(c * interval) / 86400.0,
            mb(fileSize(db)).c_str(), mb(fileSize(db + "-wal")).c_str(),
            static_cast<long long>(store.generations().size()),
            static_cast<long long>(store.cycleCount()), secs, static_cast<double>(c) / secs,
            static_cast<long long>(trimUsMax));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh_bench_store_growth: %s\n", e.what());
    return 1;
  }
  if (ownDir) std::filesystem::remove_all(dir);
  return 0;
}
