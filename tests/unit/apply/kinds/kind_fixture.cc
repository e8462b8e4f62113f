#include "kind_fixture.hh"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../../support/files.hh"
#include "decl/parse.hh"
#include "util/digest.hh"

namespace mesh::apply::test {

namespace fs = std::filesystem;

void PrintTo(const Stamp& s, std::ostream* os) {
  *os << fmt::format("{{ino {}, mtime {}, ctime {}, mode {:o}, uid {}}}", s.ino, s.mtimeNs,
                     s.ctimeNs, s.mode, s.uid);
}

void KindTest::SetUp() {
  fs::create_directories(stateDir);
  fs::create_directories(blobs + "/sha256");
}

const decl::Resource& KindTest::declare(const std::string& toml) {
  decl::ParseOptions po;
  po.node = "test";
  po.baseDir = work;
  po.stateDir = "/var/lib/mesh-host";
  declared_.push_back(
      std::make_unique<decl::Declaration>(decl::parseDeclaration(toml, "test.toml", po)));
  const auto& rs = declared_.back()->resources;
  EXPECT_EQ(rs.size(), 1u) << toml;
  return rs.back();
}

std::unique_ptr<Context> KindTest::contextFor(Mode mode) const {
  Settings s;
  s.root = root;
  s.stateDir = stateDir;
  s.blobs = blobs;
  s.node = "test";
  s.plan = mode == Mode::Plan;
  if (services)
    s.makeSupervisor = [w = services] {
      return std::make_unique<mesh::test::RecordingSupervisor>(*w);
    };
  return std::make_unique<Context>(std::move(s));
}

Digest KindTest::wantOf(const decl::Resource& r, Mode mode) {
  auto ctx = contextFor(mode);
  return applierFor(r.kind).want(*ctx, r);
}

Outcome KindTest::converge(const decl::Resource& r, const state::Record* rec, Mode mode) {
  auto ctx = contextFor(mode);
  if (r.kind == decl::Kind::Process)
    ctx->expectServices({std::get<decl::ProcessSpec>(r.spec).service}, false);
  Step step(*ctx, r.kind == decl::Kind::Process ? causes : RestartCauses{});
  const Applier& applier = applierFor(r.kind);
  std::optional<Outcome> o;
  try {
    const Digest want = applier.want(*ctx, r);
    o = Outcome::of(applier.reconcile(step, r, want, rec), want, rec);
  } catch (const Error& e) {
    ctx->dropWritesFrom(0);
    return Outcome::failed(rec, e.what());
  }
  // The cycle's commitStaged: the staged writes into place, then the outcome.
  for (auto& done : ctx->commitWrites()) {
    if (done.error) return Outcome::failed(rec, *done.error);
    if (!done.observed.empty()) {
      o->observed = std::move(done.observed);
      o->observedAsRecorded = false;
    }
  }
  return *o;
}

state::Record KindTest::recordOf(const decl::Resource& r, const Outcome& o,
                                 const state::Record* before) {
  state::Record rec;
  rec.id = r.id;
  rec.module = std::string(r.module());
  rec.kind = decl::kindName(r.kind);
  rec.path = r.path();
  rec.want = o.held().str();
  rec.wrote = o.held().str();
  rec.outcome = verdictName(o.verdict());
  rec.reason = o.reason();
  rec.detail = o.detail();
  rec.observed = o.observedAsRecorded && before ? before->observed : o.observed;
  return rec;
}

state::Record KindTest::applied(const decl::Resource& r) {
  const Outcome o = converge(r);
  EXPECT_TRUE(o.changed() || o.verdict() == Verdict::Unchanged) << o.reason();
  return recordOf(r, o);
}

std::string KindTest::read(const std::string& declared) const {
  return mesh::test::slurp(at(declared));
}

void KindTest::write(const std::string& declared, const std::string& content) const {
  fs::create_directories(fs::path(at(declared)).parent_path());
  std::ofstream(at(declared), std::ios::binary | std::ios::trunc) << content;
}

std::optional<Stamp> KindTest::stampOf(const std::string& declared) const {
  struct stat st {};
  if (::lstat(at(declared).c_str(), &st) != 0) return std::nullopt;
  return Stamp{st.st_ino, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec,
               int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec, st.st_mode,
               st.st_uid};
}

std::map<std::string, Stamp> KindTest::tree() const {
  std::map<std::string, Stamp> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string declared = it->path().string().substr(root.size());
    out[declared] = *stampOf(declared);
  }
  return out;
}

std::vector<std::string> KindTest::pathsOf(const std::map<std::string, Stamp>& t) {
  std::vector<std::string> out;
  for (const auto& [path, stamp] : t) out.push_back(path);
  return out;
}

std::string KindTest::publish(const std::string& bytes) const {
  const Digest d = Digest::ofBytes(bytes);
  std::ofstream(blobs + "/sha256/" + d.hex(), std::ios::binary) << bytes;
  return d.str();
}

std::string KindTest::publishTar(const std::map<std::string, std::string>& files) {
  const std::string dir = fmt::format("{}/tar-{}", work, ++archives_);
  for (const auto& [rel, content] : files) {
    fs::create_directories(fs::path(dir + "/" + rel).parent_path());
    std::ofstream(dir + "/" + rel, std::ios::binary) << content;
  }
  const std::string out = dir + ".tar";
  const std::string cmd = fmt::format("tar -cf '{}' -C '{}' .", out, dir);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return publish(mesh::test::slurp(out));
}

void KindTest::expectAsRecordedIsUnchangedAndUntouched(const decl::Resource& r) {
  const auto rec = applied(r);
  const auto before = tree();
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(tree(), before);
}

}  // namespace mesh::apply::test
