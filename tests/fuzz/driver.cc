// The driver: mesh-fuzz TARGET [--corpus DIR] [--mutations N] [--seconds S] [--seed K]
//                               [--out DIR] [FILE...]
// Runs TARGET over every file of DIR (and the target's built-in seeds), then over N
// inputs mutated from them by a PRNG seeded with K (or until S seconds have passed),
// and prints what it did. With FILEs, runs just those (a saved crash, again).
//
// A crash (SIGSEGV, SIGABRT, a stack overflow, …) writes the input to
// DIR_OUT/crash-TARGET-<n> (default: the working directory) before the process dies
// by the signal; an exception other than mesh::Error escaping the target does the same
// and exits 1. Inputs the decoder accepted join the pool mutations draw from, so that
// mutations reach past the first checks (no coverage feedback: g++ alone builds it).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz.hh"

namespace mesh::fuzz {

namespace {

// What the signal handler writes out: the input being run, and where.
std::string gCurrent;
char gCrashPath[4096] = "crash";

void writeCrash() {
  int fd = ::open(gCrashPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    size_t done = 0;
    while (done < gCurrent.size()) {
      ssize_t n = ::write(fd, gCurrent.data() + done, gCurrent.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const char msg[] = "mesh-fuzz: CRASH; the input is saved in ";
  (void)!::write(2, msg, sizeof msg - 1);
  (void)!::write(2, gCrashPath, std::strlen(gCrashPath));
  (void)!::write(2, "\n", 1);
}

void onSignal(int sig) {
  writeCrash();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void installHandlers() {
  // Its own stack: a stack overflow is one of the crashes looked for.
  static std::vector<char> altStack(1 << 16);
  stack_t ss{};
  ss.ss_sp = altStack.data();
  ss.ss_size = altStack.size();
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr size_t kMaxLen = 512 * 1024;

class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<std::string>& tokens) : rng_(seed), tokens_(tokens) {}

  std::string mutate(std::string s, const std::vector<std::string>& pool) {
    const int ops = 1 + static_cast<int>(below(4));
    for (int k = 0; k < ops; ++k) one(s, pool);
    if (s.size() > kMaxLen) s.resize(kMaxLen);
    return s;
  }

 private:
  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  void one(std::string& s, const std::vector<std::string>& pool) {
    static const char kInteresting[] = {'\0', '\n', '\r', '"', '\'', '\\', '{',    '}',   '[',
                                        ']',  '.',  '=',  ',', ':',  '#',  '\x1b', '\x7f'};
    static const unsigned char kHigh[] = {0x80, 0xbf, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xf4, 0xff};
    static const char* kNumbers[] = {"-1",
                                     "0",
                                     "9223372036854775807",
                                     "9223372036854775808",
                                     "-9223372036854775809",
                                     "1e999",
                                     "1.5",
                                     "0x10",
                                     "07777"};
    const size_t n = s.size();
    switch (below(11)) {
      case 0:  // flip a bit
        if (n) s[below(n)] ^= static_cast<char>(1u << below(8));
        break;
      case 1:  // a byte of the format's punctuation
        if (n) s[below(n)] = kInteresting[below(sizeof kInteresting)];
        break;
      case 2:  // a byte that is not UTF-8 on its own
        if (n) s[below(n)] = static_cast<char>(kHigh[below(sizeof kHigh)]);
        break;
      case 3: {  // cut a range out
        if (!n) break;
        const size_t at = below(n), len = 1 + below(std::min<size_t>(n - at, 64));
        s.erase(at, len);
        break;
      }
      case 4:  // a token in
        if (!tokens_.empty()) s.insert(below(n + 1), tokens_[below(tokens_.size())]);
        break;
      case 5: {  // a range copied elsewhere
        if (!n) break;
        const size_t at = below(n), len = 1 + below(std::min<size_t>(n - at, 256));
        s.insert(below(n + 1), s.substr(at, len));
        break;
      }
      case 6: {  // a short piece repeated many times: depth and length
        if (!n) break;
        const size_t at = below(n), len = 1 + below(std::min<size_t>(n - at, 8));
        const std::string piece = s.substr(at, len);
        const size_t times = 1 + below(below(2) ? 64 : 60000);
        std::string rep;
        rep.reserve(std::min(kMaxLen, piece.size() * times));
        for (size_t t = 0; t < times && rep.size() < kMaxLen; ++t) rep += piece;
        s.insert(at, rep);
        break;
      }
      case 7: {  // spliced with another input
        if (pool.empty()) break;
        const std::string& other = pool[below(pool.size())];
        if (other.empty()) break;
        const size_t cut = below(n + 1), from = below(other.size());
        s = s.substr(0, cut) + other.substr(from);
        break;
      }
      case 8: {  // a number at its extremes, over a run of digits
        const char* num = kNumbers[below(std::size(kNumbers))];
        size_t at = n ? below(n) : 0;
        while (at < n && !(s[at] >= '0' && s[at] <= '9')) ++at;
        size_t end = at;
        while (end < n && s[end] >= '0' && s[end] <= '9') ++end;
        s.replace(std::min(at, n), end - std::min(at, n), num);
        break;
      }
      case 9:  // cut short
        if (n) s.resize(below(n));
        break;
      default:  // a random byte
        if (n) s[below(n)] = static_cast<char>(below(256));
        break;
    }
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>& tokens_;
};

int usage() {
  std::fprintf(stderr,
               "usage: mesh-fuzz TARGET [--corpus DIR] [--mutations N] [--seconds S] [--seed K] "
               "[--out DIR] [FILE...]\ntargets:");
  for (const auto& t : targets()) std::fprintf(stderr, " %s", t.name);
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const Target* target = nullptr;
  for (const auto& t : targets())
    if (std::strcmp(t.name, argv[1]) == 0) target = &t;
  if (!target) return usage();
  std::vector<std::string> corpora, files;
  uint64_t mutations = 0, seed = 1;
  double seconds = 0;
  std::string out = ".";
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--corpus")
      corpora.push_back(value());
    else if (a == "--mutations")
      mutations = std::stoull(value());
    else if (a == "--seconds")
      seconds = std::stod(value());
    else if (a == "--seed")
      seed = std::stoull(value());
    else if (a == "--out")
      out = value();
    else
      files.push_back(a);
  }
  installHandlers();

  std::vector<std::string> pool;
  if (files.empty()) {
    pool = target->seeds ? target->seeds() : std::vector<std::string>{};
    for (const auto& dir : corpora) {
      std::vector<std::filesystem::path> paths;
      if (!std::filesystem::is_directory(dir)) continue;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file()) paths.push_back(e.path());
      std::sort(paths.begin(), paths.end());  // the same order every run: deterministic
      for (const auto& p : paths) pool.push_back(slurp(p));
    }
  } else {
    for (const auto& f : files) pool.push_back(slurp(f));
  }
  if (pool.empty()) pool.emplace_back();

  uint64_t execs = 0;
  uint64_t accepted = 0;
  auto runOne = [&](const std::string& input) -> bool {
    gCurrent = input;
    std::snprintf(gCrashPath, sizeof gCrashPath, "%s/crash-%s-%llu", out.c_str(), target->name,
                  static_cast<unsigned long long>(execs));
    ++execs;
    try {
      const bool ok = target->run(input);
      accepted += ok;
      return ok;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mesh-fuzz: %s let an exception escape: %s\n", target->name, e.what());
    } catch (...) {
      std::fprintf(stderr, "mesh-fuzz: %s let an exception of unknown type escape\n", target->name);
    }
    writeCrash();
    std::exit(1);
  };

  const auto start = std::chrono::steady_clock::now();
  const size_t seeds = pool.size();
  for (size_t k = 0; k < seeds; ++k) runOne(pool[k]);
  Mutator mutator(seed, target->tokens);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (files.empty()) {
    for (uint64_t m = 0; (mutations == 0 && seconds > 0) || m < mutations; ++m) {
      if (seconds > 0 && (m & 63) == 0 && elapsed() >= seconds) break;
      const std::string& base = pool[m % pool.size()];
      std::string input = mutator.mutate(base, pool);
      if (runOne(input) && pool.size() < 4096 && input.size() < 65536) pool.push_back(input);
    }
  }
  std::printf(
      "mesh-fuzz %s: %llu execs (%zu seeds, %llu accepted) in %.2f s, %.0f execs/s, crashes 0\n",
      target->name, static_cast<unsigned long long>(execs), seeds,
      static_cast<unsigned long long>(accepted), elapsed(),
      elapsed() > 0 ? static_cast<double>(execs) / elapsed() : 0.0);
  return 0;
}

}  // namespace mesh::fuzz

int main(int argc, char** argv) {
  return mesh::fuzz::main(argc, argv);
}
