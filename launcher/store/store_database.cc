// See store_database.h.
#include "launcher/store/store_database.h"

#include <sqlite3.h>

namespace podrun {
namespace {

constexpr int kBusyTimeoutMs = 10000;

}  // namespace

void StoreDatabase::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

StoreDatabase::StoreDatabase(const std::filesystem::path& path) : path_(path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path_.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, nullptr);
  db_.reset(raw);  // owned even when opening failed
  if (rc != SQLITE_OK) Fail("open");
  sqlite3_busy_timeout(db_.get(), kBusyTimeoutMs);
  sqlite3_extended_result_codes(db_.get(), 1);
  Prepare("PRAGMA journal_mode=WAL").Run();
  Exec("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL");
}

int StoreDatabase::Changes() const { return sqlite3_changes(db_.get()); }

int64_t StoreDatabase::LastInsertRowid() const { return sqlite3_last_insert_rowid(db_.get()); }

}  // namespace podrun
