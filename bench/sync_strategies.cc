// How to make a batch of new files durable, measured side by side: the ways a
// WriteBatch (src/util/write_batch.cc) could sync what it staged before and after
// its renames, on this machine's file system, quiet and beside a neighbour's
// unwritten data.
//
//   mesh_bench_sync_strategies [--files N] [--dirs D] [--size BYTES] [--runs R]
//                              [--dirty-mb M] [--dir DIR] [--threads T]
//                              [--only NAME] [--keep]
//
// Each run stages N files of BYTES bytes spread over D directories under temp
// names, then each strategy makes them durable and renames them into place:
//   syncfs      syncfs of the file system, renames, syncfs again (the old way);
//   sequential  fdatasync of each file, renames, fsync of each directory;
//   pool        the same syncs issued together from T threads;
//   io_uring    the same syncs issued together through one io_uring (when built
//               with liburing-dev installed; mesh-host itself does not use it);
//   pool+early  pool, each file's writeback started as it is staged.
// With --dirty-mb, before every run a neighbour writes M MiB to a file on the same
// file system and leaves it unwritten (Dirty in /proc/meminfo). Strategies are
// interleaved run by run; the report is each one's median and range in ms, staging
// and syncing together. --only runs one strategy; --keep leaves the files made and
// calls no sync(2) before a run (for a caller timing the whole process as the floor
// of a durable first apply, in rounds where nothing is deleted before the end and
// which sync before each process: bench/first_apply_vs_cfengine.sh).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef MESH_HAVE_LIBURING
#include <liburing.h>
#endif

namespace {

struct Options {
  size_t files = 1;
  size_t dirs = 1;
  size_t size = 200;
  int runs = 7;
  size_t dirtyMb = 0;
  size_t threads = 16;
  std::string dir = "/var/tmp";
  std::string only;
  bool keep = false;
};

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

long dirtyKb() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("Dirty:")) return std::stol(line.substr(6));
  return -1;
}

struct Staged {
  int dir;  // index into dirs
  std::string name, tmp;
};

struct Round {
  std::vector<int> dirs;
  std::vector<Staged> files;
};

Round stage(const std::string& root, const Options& o, bool early) {
  Round r;
  for (size_t d = 0; d < o.dirs; ++d) {
    const std::string path = fmt::format("{}/d{}", root, d);
    std::filesystem::create_directories(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    check(fd >= 0, "open " + path);
    r.dirs.push_back(fd);
  }
  const std::string content(o.size, 'x');
  for (size_t i = 0; i < o.files; ++i) {
    Staged s{static_cast<int>(i % o.dirs), fmt::format("f{}", i), fmt::format(".tmp.f{}", i)};
    const int fd = ::openat(r.dirs[s.dir], s.tmp.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    check(fd >= 0, "create " + s.tmp);
    check(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()),
          "write");
    if (early) ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    ::close(fd);
    r.files.push_back(std::move(s));
  }
  return r;
}

void renameAll(const Round& r) {
  for (const auto& f : r.files)
    check(::renameat(r.dirs[f.dir], f.tmp.c_str(), r.dirs[f.dir], f.name.c_str()) == 0, "rename");
}

void closeAll(Round& r) {
  for (int fd : r.dirs) ::close(fd);
}

int reopen(const Round& r, const Staged& f) {
  const int fd = ::openat(r.dirs[f.dir], f.tmp.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  check(fd >= 0, "reopen " + f.tmp);
  return fd;
}

// Runs job(i) for i in [0, n) on up to `threads` threads.
void parallel(size_t n, size_t threads, const std::function<void(size_t)>& job) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::min(n, threads); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) job(i);
    });
  for (auto& t : pool) t.join();
}

void viaSyncfs(Round& r, const Options&) {
  check(::syncfs(r.dirs[0]) == 0, "syncfs");
  renameAll(r);
  if (r.dirs.size() >= 8)
    check(::syncfs(r.dirs[0]) == 0, "syncfs");
  else
    for (int d : r.dirs) check(::fsync(d) == 0, "fsync dir");
}

void viaSequential(Round& r, const Options&) {
  for (const auto& f : r.files) {
    const int fd = reopen(r, f);
    check(::fdatasync(fd) == 0, "fdatasync");
    ::close(fd);
  }
  renameAll(r);
  for (int d : r.dirs) check(::fsync(d) == 0, "fsync dir");
}

void viaPool(Round& r, const Options& o) {
  parallel(r.files.size(), o.threads, [&](size_t i) {
    const int fd = reopen(r, r.files[i]);
    check(::fdatasync(fd) == 0, "fdatasync");
    ::close(fd);
  });
  renameAll(r);
  parallel(r.dirs.size(), o.threads, [&](size_t i) { check(::fsync(r.dirs[i]) == 0, "fsync"); });
}

#ifdef MESH_HAVE_LIBURING
// Every fd synced through one ring, `depth` in flight at a time.
void uringSync(const std::vector<int>& fds, bool data) {
  io_uring ring;
  const unsigned depth = 256;
  check(io_uring_queue_init(depth, &ring, 0) == 0, "io_uring_queue_init");
  size_t submitted = 0, done = 0;
  while (done < fds.size()) {
    while (submitted < fds.size() && submitted - done < depth) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (!sqe) break;
      io_uring_prep_fsync(sqe, fds[submitted], data ? IORING_FSYNC_DATASYNC : 0);
      ++submitted;
    }
    io_uring_submit_and_wait(&ring, 1);
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      if (cqe->res < 0) {
        errno = -cqe->res;
        check(false, "io_uring fsync");
      }
      ++seen;
    }
    io_uring_cq_advance(&ring, seen);
    done += seen;
  }
  io_uring_queue_exit(&ring);
}

void viaUring(Round& r, const Options&) {
  std::vector<int> fds;
  for (const auto& f : r.files) fds.push_back(reopen(r, f));
  uringSync(fds, true);
  for (int fd : fds) ::close(fd);
  renameAll(r);
  uringSync(r.dirs, false);
}
#endif

struct Strategy {
  std::string name;
  bool early;
  void (*run)(Round&, const Options&);
  std::vector<double> ms;
};

void dirtyNeighbour(const std::string& root, size_t mb) {
  // A new file each time: ext4 (auto_da_alloc) writes out a file truncated and
  // written again as it is closed.
  const std::string path = root + "/neighbour";
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "open neighbour");
  const std::string chunk(1 << 20, 'n');
  for (size_t i = 0; i < mb; ++i)
    check(::write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size()),
          "write neighbour");
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--files")
      o.files = std::stoul(next());
    else if (a == "--dirs")
      o.dirs = std::stoul(next());
    else if (a == "--size")
      o.size = std::stoul(next());
    else if (a == "--runs")
      o.runs = std::stoi(next());
    else if (a == "--dirty-mb")
      o.dirtyMb = std::stoul(next());
    else if (a == "--threads")
      o.threads = std::stoul(next());
    else if (a == "--dir")
      o.dir = next();
    else if (a == "--only")
      o.only = next();
    else if (a == "--keep")
      o.keep = true;
    else {
      fmt::print(stderr, "unknown option {}\n", a);
      return 2;
    }
  }
  o.dirs = std::max<size_t>(1, std::min(o.dirs, o.files));
  std::vector<Strategy> all = {
      {"syncfs", false, viaSyncfs, {}},  {"sequential", false, viaSequential, {}},
      {"pool", false, viaPool, {}},
#ifdef MESH_HAVE_LIBURING
      {"io_uring", false, viaUring, {}},
#endif
      {"pool+early", true, viaPool, {}},
  };
  if (!o.only.empty()) {
    std::erase_if(all, [&](const Strategy& s) { return s.name != o.only; });
    if (all.empty()) {
      fmt::print(stderr, "no strategy {}\n", o.only);
      return 2;
    }
  }
  const std::string root = fmt::format("{}/mesh-sync-bench.{}", o.dir, ::getpid());
  std::filesystem::create_directories(root);
  long dirtyBefore = 0;
  for (int run = 0; run < o.runs; ++run) {
    for (auto& s : all) {
      const std::string at = fmt::format("{}/r{}-{}", root, run, &s - all.data());
      if (!o.keep) ::sync();  // nothing of earlier rounds pending (--keep: the caller's part)
      if (o.dirtyMb) dirtyNeighbour(root, o.dirtyMb);
      dirtyBefore = dirtyKb();
      const auto t0 = std::chrono::steady_clock::now();
      Round r = stage(at, o, s.early);
      s.run(r, o);
      s.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      closeAll(r);
      if (!o.keep) std::filesystem::remove_all(at);
    }
  }
  if (!o.keep) std::filesystem::remove_all(root);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  fmt::print(
      "{} files of {} bytes in {} directories, {} runs, on {} ({} cores); neighbour's "
      "dirty data {} MiB (Dirty before the last run: {} MiB)\n",
      o.files, o.size, o.dirs, o.runs, host, std::thread::hardware_concurrency(), o.dirtyMb,
      dirtyBefore / 1024);
  for (auto& s : all) {
    std::sort(s.ms.begin(), s.ms.end());
    fmt::print("  {:<12} median {:9.2f} ms   min {:9.2f}   max {:9.2f}\n", s.name,
               s.ms[s.ms.size() / 2], s.ms.front(), s.ms.back());
  }
}
