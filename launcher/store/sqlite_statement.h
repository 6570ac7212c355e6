// Small RAII wrappers over SQLite's C API for the job store: a prepared statement, a
// transaction, and errors that name the database file. Every failure throws podrun::Error
// (ExitCode::kFailed) as "<path>: <what>: <SQLite's message>".
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "launcher/base/error.h"

namespace podrun {

// What follows SQLite's message when the busy timeout ran out: the lock is someone else's.
inline const char* BusyHint(sqlite3* db) {
  return db && (sqlite3_extended_errcode(db) & 0xff) == SQLITE_BUSY
             ? " (another process, e.g. another podrun, holds the job store's lock; waited for it "
               "in vain)"
             : "";
}

[[noreturn]] inline void Fail(sqlite3* db, const std::filesystem::path& path,
                              const std::string& what) {
  throw Error(ExitCode::kFailed, path.string() + ": " + what + ": " +
                                     (db ? sqlite3_errmsg(db) : "out of memory") + BusyHint(db));
}

// A prepared statement, finalized when it goes out of scope. Bind indexes are 1-based, column
// indexes 0-based, as in SQLite.
class Statement {
 public:
  Statement(sqlite3* db, const std::filesystem::path& path, const char* sql)
      : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) Fail(db, path, "prepare");
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  Statement& Bind(int i, const std::string& value) {
    return Check(sqlite3_bind_text(stmt_, i, value.data(), static_cast<int>(value.size()),
                                   SQLITE_TRANSIENT));
  }
  Statement& Bind(int i, int64_t value) { return Check(sqlite3_bind_int64(stmt_, i, value)); }
  Statement& Bind(int i, int value) { return Check(sqlite3_bind_int64(stmt_, i, value)); }
  Statement& Bind(int i, double value) { return Check(sqlite3_bind_double(stmt_, i, value)); }
  template <typename T>
  Statement& Bind(int i, const std::optional<T>& value) {
    if (value) return Bind(i, *value);
    return Check(sqlite3_bind_null(stmt_, i));
  }

  // Makes the statement ready to run again, with no bindings.
  Statement& Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return *this;
  }

  // Steps once: true when a row is available.
  bool Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Fail(db_, path_, std::string("query '") + sqlite3_sql(stmt_) + "'");
  }
  // Runs a statement that returns no rows.
  void Run() {
    while (Step()) {
    }
  }

  std::string Text(int col) {
    const unsigned char* text = sqlite3_column_text(stmt_, col);
    return text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, col))
                : std::string();
  }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::optional<int64_t> OptionalInt(int col) {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return Int(col);
  }
  std::optional<double> OptionalDouble(int col) {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }
  std::optional<int> OptionalInt32(int col) {
    std::optional<int64_t> v = OptionalInt(col);
    return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  }

 private:
  Statement& Check(int rc) {
    if (rc != SQLITE_OK) Fail(db_, path_, "bind");
    return *this;
  }

  sqlite3* db_;
  const std::filesystem::path& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

inline void Exec(sqlite3* db, const std::filesystem::path& path, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string detail = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw Error(ExitCode::kFailed, path.string() + ": " + detail + BusyHint(db));
  }
}

// BEGIN IMMEDIATE (takes the write lock now, waiting up to the busy timeout); rolls back unless
// Commit() was called.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::filesystem::path& path) : db_(db), path_(path) {
    Exec(db_, path_, "BEGIN IMMEDIATE");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void Commit() {
    Exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::filesystem::path& path_;
  bool done_ = false;
};

}  // namespace podrun
