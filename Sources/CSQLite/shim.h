#ifndef SIGNET_CSQLITE_SHIM_H
#define SIGNET_CSQLITE_SHIM_H
#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call: this fixes its one use here.
/// Turns off SQLite's memory statistics, which take a process-wide mutex on every
/// sqlite3_malloc and sqlite3_free. Must run before SQLite initializes; returns
/// SQLITE_MISUSE (harmless) if it already has.
static inline int signet_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
