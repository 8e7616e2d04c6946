#include "eval/runs/run_database.h"

#include <sqlite3.h>

#include <cstdlib>

#include "util/error.h"
#include "util/sha256.h"

namespace proctor {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created TEXT NOT NULL,
  task TEXT NOT NULL,
  model TEXT NOT NULL,
  model_sha256 TEXT NOT NULL,
  proctor_version TEXT NOT NULL,
  settings TEXT NOT NULL,
  n INTEGER NOT NULL,
  correct INTEGER NOT NULL,
  accuracy REAL NOT NULL,
  standard_error REAL NOT NULL,
  kl TEXT,
  capability REAL,
  disk_bytes INTEGER,
  machine TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  item_id TEXT NOT NULL,
  outcome TEXT NOT NULL,
  PRIMARY KEY (run_id, item_id)
);
)sql";

// A prepared statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const fs::path& path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      Fail("runs", "{}: {} (is it a proctor run database?)", path.string(), sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }

  void Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t value) { sqlite3_bind_int64(stmt_, i, value); }
  void Bind(int i, double value) { sqlite3_bind_double(stmt_, i, value); }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }

  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
  }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

void Exec(sqlite3* db, const char* sql, const fs::path& path) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message != nullptr ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    Fail("runs", "{}: {}", path.string(), text);
  }
}

void StepDone(sqlite3* db, Statement& statement, const fs::path& path) {
  if (sqlite3_step(statement.get()) != SQLITE_DONE) {
    Fail("runs", "{}: {}", path.string(), sqlite3_errmsg(db));
  }
}

const char* kRunColumns =
    "id, created, task, model, model_sha256, proctor_version, settings, n, correct, accuracy, "
    "standard_error, kl, capability, disk_bytes, machine";

RunRecord ReadRun(const Statement& s) {
  RunRecord r;
  sqlite3_stmt* st = s.get();
  r.id = sqlite3_column_int64(st, 0);
  r.created = s.Text(1);
  r.task = s.Text(2);
  r.model = s.Text(3);
  r.model_sha256 = s.Text(4);
  r.proctor_version = s.Text(5);
  r.settings = Json::parse(s.Text(6), nullptr, false);
  r.n = sqlite3_column_int64(st, 7);
  r.correct = sqlite3_column_int64(st, 8);
  r.accuracy = sqlite3_column_double(st, 9);
  r.standard_error = sqlite3_column_double(st, 10);
  if (!s.IsNull(11)) r.kl = Json::parse(s.Text(11), nullptr, false);
  if (!s.IsNull(12)) r.capability = sqlite3_column_double(st, 12);
  if (!s.IsNull(13)) r.disk_bytes = sqlite3_column_int64(st, 13);
  r.machine = s.Text(14);
  return r;
}

}  // namespace

RunDatabase RunDatabase::Open(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  RunDatabase database;
  database.path_ = path;
  if (sqlite3_open_v2(path.c_str(), &database.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    Fail("runs", "cannot open the run database '{}': {}", path.string(),
         database.db_ != nullptr ? sqlite3_errmsg(database.db_) : "out of memory");
  }
  sqlite3_busy_timeout(database.db_, 30000);
  Exec(database.db_, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;", path);
  int version = 0;
  {
    Statement s(database.db_, "PRAGMA user_version", path);
    if (sqlite3_step(s.get()) == SQLITE_ROW) version = sqlite3_column_int(s.get(), 0);
  }
  if (version > kSchemaVersion) {
    Fail("runs",
         "{}: run database schema version {} (this proctor writes {}): a newer proctor "
         "wrote it",
         path.string(), version, kSchemaVersion);
  }
  if (version == 0) {
    Exec(database.db_, "BEGIN IMMEDIATE", path);
    Exec(database.db_, kSchema, path);
    Exec(database.db_, "PRAGMA user_version = 1", path);
    Exec(database.db_, "COMMIT", path);
  }
  return database;
}

RunDatabase::RunDatabase(RunDatabase&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

RunDatabase& RunDatabase::operator=(RunDatabase&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

RunDatabase::~RunDatabase() { sqlite3_close(db_); }

int64_t RunDatabase::Insert(const RunRecord& r) {
  Exec(db_, "BEGIN IMMEDIATE", path_);
  try {
    Statement run(db_,
                  "INSERT INTO runs (created, task, model, model_sha256, proctor_version, "
                  "settings, n, correct, accuracy, standard_error, kl, capability, disk_bytes, "
                  "machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  path_);
    run.Bind(1, r.created);
    run.Bind(2, r.task);
    run.Bind(3, r.model);
    run.Bind(4, r.model_sha256);
    run.Bind(5, r.proctor_version);
    run.Bind(6, r.settings.dump());
    run.Bind(7, r.n);
    run.Bind(8, r.correct);
    run.Bind(9, r.accuracy);
    run.Bind(10, r.standard_error);
    if (r.kl.is_null()) {
      run.BindNull(11);
    } else {
      run.Bind(11, r.kl.dump());
    }
    if (r.capability) {
      run.Bind(12, *r.capability);
    } else {
      run.BindNull(12);
    }
    if (r.disk_bytes) {
      run.Bind(13, *r.disk_bytes);
    } else {
      run.BindNull(13);
    }
    run.Bind(14, r.machine);
    StepDone(db_, run, path_);
    const int64_t id = sqlite3_last_insert_rowid(db_);
    Statement item(db_, "INSERT INTO items (run_id, seq, item_id, outcome) VALUES (?, ?, ?, ?)",
                   path_);
    for (size_t i = 0; i < r.items.size(); ++i) {
      sqlite3_reset(item.get());
      item.Bind(1, id);
      item.Bind(2, static_cast<int64_t>(i));
      item.Bind(3, r.items[i].first);
      item.Bind(4, r.items[i].second);
      StepDone(db_, item, path_);
    }
    Exec(db_, "COMMIT", path_);
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<RunRecord> RunDatabase::List(int64_t limit) const {
  const std::string sql = fmt::format("SELECT {} FROM runs ORDER BY id DESC{}", kRunColumns,
                                      limit > 0 ? fmt::format(" LIMIT {}", limit) : "");
  Statement s(db_, sql.c_str(), path_);
  std::vector<RunRecord> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ReadRun(s));
  return out;
}

std::optional<RunRecord> RunDatabase::Get(int64_t id) const {
  const std::string sql = fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns);
  Statement s(db_, sql.c_str(), path_);
  s.Bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  RunRecord record = ReadRun(s);
  Statement items(db_, "SELECT item_id, outcome FROM items WHERE run_id = ? ORDER BY seq", path_);
  items.Bind(1, id);
  while (sqlite3_step(items.get()) == SQLITE_ROW) {
    record.items.emplace_back(items.Text(0), items.Text(1));
  }
  return record;
}

fs::path DefaultRunDatabasePath() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "proctor" / "runs.sqlite";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : ".") / ".cache" / "proctor" /
         "runs.sqlite";
}

std::pair<std::string, std::optional<int64_t>> ModelIdentity(const Json& description) {
  if (!description.is_object()) return {"", std::nullopt};  // a server: nothing to hash
  const std::string kind = description.value("kind", "");
  if (kind == "model-file") {
    return {description.value("sha256", ""), description.value("bytes", int64_t{0})};
  }
  if (kind == "model-directory" && description.contains("files")) {
    std::string listing;
    int64_t weights = 0;
    for (const Json& file : description["files"]) {
      const std::string name = file.value("name", "");
      listing += file.value("sha256", "") + "  " + name + "\n";
      if (name.ends_with(".safetensors")) weights += file.value("bytes", int64_t{0});
    }
    return {Sha256Hex(listing), weights};
  }
  return {"", std::nullopt};
}

}  // namespace proctor
