#ifndef HERALD_CSQLITE_SHIM_H
#define HERALD_CSQLITE_SHIM_H
#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

/// Binds `length` bytes at `text` without a copy (SQLITE_STATIC): they must stay unchanged until
/// the parameter is bound again or cleared, or the statement is finalized.
static inline int herald_sqlite3_bind_text_static(sqlite3_stmt *stmt, int index, const unsigned char *text, int length) {
    // An empty text may have no storage: SQLite reads a null pointer as NULL, so point at an empty string.
    if (text == 0 || length == 0) text = (const unsigned char *)"";
    return sqlite3_bind_text(stmt, index, (const char *)text, length, SQLITE_STATIC);
}

static inline int herald_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// SQLITE_TRANSIENT is a cast macro that Swift cannot import.
static inline int herald_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}
/// Waits for a lock held by another connection (another Herald process) in steps of 100 µs, up to
/// `timeout_ms`. SQLite's own busy_timeout sleeps 1, 2, 5, 10 … 100 ms between tries, so a lock
/// held for 5 ms can stall the waiting writer, and every request queued behind it, for 8 ms or more.
/// The state belongs to one connection (which one thread uses at a time) and must outlive it.
struct herald_busy_state {
    long timeout_ms;
    struct timespec since;
};

static inline int herald_sqlite3_busy_wait(void *argument, int count) {
    struct herald_busy_state *state = (struct herald_busy_state *)argument;
    if (state->timeout_ms <= 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (count == 0) {
        state->since = now;
    } else {
        long waited_ms = (now.tv_sec - state->since.tv_sec) * 1000 + (now.tv_nsec - state->since.tv_nsec) / 1000000;
        if (waited_ms >= state->timeout_ms) return 0;
    }
    struct timespec step = {0, 100000};
    nanosleep(&step, NULL);
    return 1;
}

static inline int herald_sqlite3_set_busy_wait(sqlite3 *db, struct herald_busy_state *state) {
    return sqlite3_busy_handler(db, herald_sqlite3_busy_wait, state);
}
/// The first region of the database's WAL index (its `-shm` file) as SQLite itself maps it for the
/// connections of this process, or NULL when the database is not in WAL mode. It stays mapped while
/// any connection of the process has the database open. Asking SQLite for its mapping, instead of
/// opening the file, matters: closing any descriptor of the file would drop the process's POSIX locks
/// on it, which SQLite relies on.
static inline const volatile void *herald_sqlite3_wal_index(sqlite3 *db) {
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == NULL) return NULL;
    const sqlite3_io_methods *methods = file->pMethods;
    if (methods == NULL || methods->iVersion < 2 || methods->xShmMap == NULL) return NULL;
    volatile void *region = NULL;
    if (methods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return NULL;
    return region;
}

#endif
