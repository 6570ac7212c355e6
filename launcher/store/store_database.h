// StoreDatabase: one open connection to the job store's SQLite file, and all that the store's
// record classes may do with it: prepare a statement, run SQL, open a transaction, read what
// the last change did. JobStore owns it and lends it to RecoveryRecords and RunRecords
// (JobStore::database()), so they share the connection without reaching into JobStore.
// One object from one thread at a time. Errors throw podrun::Error (ExitCode::kFailed) naming
// the file (sqlite_statement.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "launcher/store/sqlite_statement.h"

struct sqlite3;

namespace podrun {

class StoreDatabase {
 public:
  // Opens (creating if missing) the file at `path`, never through a symlink: WAL, a busy timeout
  // (another process's write waits, then fails naming the lock), foreign keys on.
  explicit StoreDatabase(const std::filesystem::path& path);
  StoreDatabase(const StoreDatabase&) = delete;
  StoreDatabase& operator=(const StoreDatabase&) = delete;

  const std::filesystem::path& path() const { return path_; }

  Statement Prepare(const char* sql) { return Statement(db_.get(), path_, sql); }
  // BEGIN IMMEDIATE; rolled back unless committed.
  Transaction Begin() { return Transaction(db_.get(), path_); }
  // Runs SQL that returns no rows (several statements allowed).
  void Exec(const char* sql) { podrun::Exec(db_.get(), path_, sql); }
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int Changes() const;
  // The rowid of the last INSERT.
  int64_t LastInsertRowid() const;
  // Throws podrun::Error: "<path>: <what>: <SQLite's last message>".
  [[noreturn]] void Fail(const std::string& what) const { podrun::Fail(db_.get(), path_, what); }

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::filesystem::path path_;
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace podrun
