#include "harness.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../leftovers/processes.hh"
#include "../support/child.hh"

namespace mesh::e2e {

namespace fs = std::filesystem;

// Everything this binary starts carries the run's tag (tests/leftovers/processes.hh).
[[maybe_unused]] static const bool kTagged = test::tagTestRun(MESH_HOST_BIN);

nlohmann::json Result::json() const {
  auto j = nlohmann::json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << out << "\nstderr: " << err;
  return j;
}

Result runCommand(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env) {
  char tmpl[] = "/tmp/mesh-e2e-out.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string outPath = dir + "/out", errPath = dir + "/err";
  std::vector<std::string> vars;
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  Result r;
  r.code = test::waitExit(test::spawnChild(argv, outPath, errPath, test::Output::Truncate, vars));
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  fs::remove_all(dir);
  return r;
}

static void snapshotInto(const std::string& base, const std::string& rel,
                         const std::vector<std::string>& skip,
                         std::map<std::string, PathSnapshot>& out) {
  const std::string path = rel.empty() ? base : base + "/" + rel;
  for (const auto& s : skip)
    if (rel == s) return;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  PathSnapshot snap;
  snap.ino = st.st_ino;
  snap.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  snap.ctimeNs = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  snap.mode = st.st_mode;
  if (S_ISREG(st.st_mode)) snap.content = slurp(path);
  if (S_ISLNK(st.st_mode)) snap.content = fs::read_symlink(path).string();
  out[rel.empty() ? "." : rel] = snap;
  if (S_ISDIR(st.st_mode)) {
    for (const auto& e : fs::directory_iterator(path)) {
      auto name = e.path().filename().string();
      snapshotInto(base, rel.empty() ? name : rel + "/" + name, skip, out);
    }
  }
}

std::map<std::string, PathSnapshot> snapshotTree(const std::string& dir,
                                                 const std::vector<std::string>& skip) {
  std::map<std::string, PathSnapshot> out;
  snapshotInto(dir, "", skip, out);
  return out;
}

void PrintTo(const PathSnapshot& s, std::ostream* os) {
  *os << "{ino " << s.ino << ", mtime " << s.mtimeNs << ", ctime " << s.ctimeNs << ", mode 0"
      << std::oct << s.mode << std::dec << ", " << s.content.size() << " bytes}";
}

void Node::SetUp() {
  char tmpl[] = "/tmp/mesh-e2e.XXXXXX";
  work = ::mkdtemp(tmpl);
  root = work + "/root";
  blobs = work + "/blobs";
  fs::create_directories(root);
  fs::create_directories(blobs + "/sha256");
}

void Node::TearDown() {
  // Whatever the test left running in its root — services and their supervisors,
  // agents, a cycle blocked mid-way — ends here, also after a failed assertion.
  // A fixture that starts services stops them properly first (process_fixture.hh);
  // this is what remains when that could not work.
  if (!work.empty()) {
    const auto killed = test::killProcessesUsing(work);
    if (!killed.empty()) {
      std::string list;
      for (const auto& k : killed) list += "\n  " + k;
      std::fprintf(stderr, "[harness] killed %zu process(es) left in %s:%s\n", killed.size(),
                   work.c_str(), list.c_str());
    }
  }
  if (!HasFailure() || !std::getenv("MESH_KEEP_TEST_DIRS")) fs::remove_all(work);
}

std::vector<std::string> Node::agentArgv(const std::string& decl,
                                         const std::string& interval) const {
  std::vector<std::string> argv = {
      MESH_HOST_BIN, "run", "--declaration", decl,  "--interval", interval, "--splay",      "0",
      "--root",      root,  "--blobs",       blobs, "--node",     "test",   "--log-format", "json"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  return argv;
}

Result Node::mesh(std::vector<std::string> args, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {MESH_HOST_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  // Each command takes only the options it uses (mesh-host COMMAND --help, which
  // refuses any other): the fixture's options go to the commands that take them.
  const std::string command = args.empty() ? "" : args.front();
  const auto takes = [&command](std::string_view option) {
    const bool converges =
        command == "apply" || command == "plan" || command == "rollback" || command == "run";
    const bool store = converges || command == "status" || command == "history" ||
                       command == "generations" || command == "gc" || command == "pause" ||
                       command == "resume";
    if (option == "--root" || option == "--state-dir") return store || command == "key";
    if (option == "--node") return store;
    if (option == "--supervisor" || option == "--unit-dir") return converges || command == "status";
    return converges;  // --blobs, --trust
  };
  const std::pair<std::string, std::string> fixture[] = {
      {"--root", root}, {"--blobs", blobs}, {"--node", "test"}};
  for (const auto& [option, value] : fixture)
    if (takes(option)) argv.insert(argv.end(), {option, value});
  for (size_t i = 0; i + 1 < extraArgs.size(); i += 2)  // pairs: option, value
    if (takes(extraArgs[i])) argv.insert(argv.end(), {extraArgs[i], extraArgs[i + 1]});
  auto allEnv = extraEnv;
  for (const auto& [k, v] : env) allEnv[k] = v;
  return runCommand(argv, allEnv);
}

Result Node::apply(const std::string& decl, bool json) {
  return json ? mesh({"apply", decl, "--json"}) : mesh({"apply", decl});
}

Result Node::plan(const std::string& decl, bool json) {
  return json ? mesh({"plan", decl, "--json"}) : mesh({"plan", decl});
}

std::string Node::declare(const std::string& text, const std::string& name) {
  const std::string path = work + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Node::publish(const std::string& file) {
  Result r = runCommand({"sha256sum", file});
  EXPECT_EQ(r.code, 0);
  const std::string hex = r.out.substr(0, 64);
  fs::copy_file(file, blobs + "/sha256/" + hex, fs::copy_options::overwrite_existing);
  return "sha256:" + hex;
}

std::string Node::makeArchive(const std::map<std::string, std::string>& files,
                              const std::string& cmd) {
  static int counter = 0;
  const std::string dir = work + "/archive-src-" + std::to_string(++counter);
  fs::create_directories(dir);
  for (const auto& [rel, content] : files) {
    fs::create_directories(fs::path(dir + "/" + rel).parent_path());
    std::ofstream(dir + "/" + rel, std::ios::binary) << content;
  }
  Result r = runCommand({"sh", "-c", "cd '" + dir + "' && " + cmd});
  EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
  const std::string out = work + "/archive-" + std::to_string(counter);
  fs::rename(dir + "/out", out);
  return out;
}

std::string Node::read(const std::string& declared) const {
  return slurp(at(declared));
}

void Node::write(const std::string& declared, const std::string& content) const {
  std::ofstream(at(declared), std::ios::binary) << content;
}

nlohmann::json Node::outcomeOf(const nlohmann::json& report, const std::string& id) {
  for (const auto& o : report.at("outcomes"))
    if (o.at("id") == id) return o;
  ADD_FAILURE() << "no outcome for " << id << " in " << report.dump();
  return nlohmann::json::object();
}

}  // namespace mesh::e2e
