// The compiled_declaration table: the one compiled declaration kept (decl/compiled.hh),
// read without a lock and without a write (immutable mode), a piece at a time; and
// the cache the declaration loader uses over it (state/compiled_cache.hh).
#include <climits>
#include <optional>
#include <string>

#include "state/compiled_cache.hh"
#include "state/store.hh"
#include "state/store/impl.hh"
#include "util/fd.hh"

namespace mesh::state {

namespace {

// The store's URI to read the compiled declaration with: immutable, so nothing
// is locked or written (Store::peekCompiledDeclaration).
std::string immutableUri(const std::string& stateDir) {
  // A URI, its path escaped where SQLite's URI syntax would read it otherwise.
  std::string uri = "file:";
  for (char c : StateDir{stateDir}.store()) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  uri += "?immutable=1";
  return uri;
}

constexpr int kImmutableFlags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;

}  // namespace

bool Store::readCompiledDeclaration(const std::string& stateDir, const std::string& key,
                                    const std::function<void(size_t, const FormPiece&)>& use) {
  std::optional<Db> db;
  sqlite3_blob* blob = nullptr;
  try {
    db.emplace(immutableUri(stateDir), kImmutableFlags);
    Stmt s(*db, "SELECT rowid FROM compiled_declaration WHERE key = ?",
           "finding the compiled declaration");
    auto q = s.start();
    q.bind(key);
    if (!q.next()) return false;
    const int64_t row = q.integer(0);
    // An incremental blob read: SQLite copies each piece out of the row's
    // overflow pages as it is asked for, never the whole form at once.
    if (sqlite3_blob_open(db->get(), "main", "compiled_declaration", "form", row, 0, &blob) !=
        SQLITE_OK)
      return false;
  } catch (...) {
    return false;
  }
  Finally close([&] { sqlite3_blob_close(blob); });
  const auto size = static_cast<size_t>(sqlite3_blob_bytes(blob));
  const FormPiece piece = [&](size_t offset, char* out, size_t n) {
    if (offset > size || n > size - offset || n > INT_MAX) return false;
    return sqlite3_blob_read(blob, out, static_cast<int>(n), static_cast<int>(offset)) == SQLITE_OK;
  };
  use(size, piece);
  return true;
}

std::optional<std::string> Store::peekCompiledDeclaration(const std::string& stateDir,
                                                          const std::string& key) noexcept {
  try {
    Db db(immutableUri(stateDir), kImmutableFlags);
    Stmt s(db, "SELECT form FROM compiled_declaration WHERE key = ?",
           "reading the compiled declaration");
    auto q = s.start();
    q.bind(key);
    if (!q.next()) return std::nullopt;
    return q.blob(0);
  } catch (...) {
    return std::nullopt;
  }
}

void Store::putCompiledDeclaration(const std::string& key, std::string_view form) {
  putCompiledDeclaration(key, writerOf(form));
}

void Store::putCompiledDeclaration(const std::string& key, const FormWriter& write) {
  // Only a cache: failing to keep it (a full state directory) must not keep the
  // cycle from running — or from failing on its own account, which is noted for
  // `status` (runCycle) — so the next apply parses the text again.
  try {
    constexpr const char* kSaving = "saving the compiled declaration";
    const size_t size = write({});
    if (size > INT_MAX) impl_->db.fail(SQLITE_TOOBIG, kSaving);
    Txn txn(*this);
    impl_->db.exec("DELETE FROM compiled_declaration", "replacing the compiled declaration");
    // The row made with room for the form, which is then written into it a piece
    // at a time as it is made: bound whole, SQLite copied it and built a record of
    // the copy (at 100,000 files, two more of a 22 MB form beside it and the model:
    // 44 MB of the first apply's peak), and the form itself was 22 MB more.
    Stmt s(impl_->db, "INSERT INTO compiled_declaration (key, form) VALUES (?, zeroblob(?))",
           kSaving);
    s.start().bind(key).bind(static_cast<int64_t>(size)).run();
    impl_->db.fillBlob("compiled_declaration", "form", sqlite3_last_insert_rowid(impl_->db.get()),
                       size, write, kSaving);
    txn.commit();
    impl_->wrote(WriteKind::Checkpointed);
  } catch (const Error&) {
  }
}

void StoredCompiledCache::read(const std::string& key,
                               const std::function<void(const FormSource&)>& use) {
  // Read a piece at a time, never held whole. A store that cannot be read
  // is the cycle's to report, not the parse's: a miss.
  Store::readCompiledDeclaration(stateDir_, key, [&](size_t size, const Store::FormPiece& piece) {
    use(FormSource{size, piece});
  });
}

void StoredCompiledCache::keepIn(Store& store, const FormWriter& write) {
  if (!key_.empty()) store.putCompiledDeclaration(key_, write);
  key_.clear();
}

}  // namespace mesh::state
