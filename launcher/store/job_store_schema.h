// The job store's schema, as migrations: migration v moves a database from PRAGMA user_version v
// to v + 1. Append new steps; never edit a released one.
#pragma once

namespace podrun {

// The schema version this podrun writes (the number of migrations).
extern const int kJobStoreSchemaVersion;

// The SQL of migration `version` (0 <= version < kJobStoreSchemaVersion).
const char* JobStoreMigration(int version);

}  // namespace podrun
