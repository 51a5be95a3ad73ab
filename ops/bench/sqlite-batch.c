// SQLite's CPU per registration on Herald's schema, written three ways (ops/bench/sqlite-batch
// builds and runs it):
//   rows           as the writer ran registerDevice one at a time: per request a savepoint, the device upsert
//                  (its opt-in history row written by the trigger schema 18 had, which the caller
//                  creates) and two tag upserts;
//   batch          per batch a multi-row device upsert with RETURNING (that trigger writing the
//                  history row by row) and one multi-row tag upsert;
//   batch-history  as batch, with the history written by one multi-row INSERT of its own, as the
//                  writer writes it since schema 19 (no trigger).
//
//   sqlite-batch DATABASE MODE REGISTRATIONS BATCH
// Prints one line: "<mode> <µs of process CPU per registration>".
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FIELDS 16
static const char *const columns =
    "app_id, hwid, platform, language, timezone_offset, app_version, os_version, device_model, sdk_version, user_id, "
    "notification_types, created_at, updated_at, push_token, gateway, web_p256dh, web_auth";
static const char *const attributes[] = {
    "language", "timezone_offset", "app_version", "os_version", "device_model", "sdk_version", "user_id", "notification_types",
};

static double cpuSeconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fail(sqlite3 *db, const char *what) {
    fprintf(stderr, "sqlite-batch: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void run(sqlite3 *db, const char *sql) {
    if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK) fail(db, sql);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = 0;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, 0) != SQLITE_OK) fail(db, "prepare");
    return statement;
}

// Appends to `sql` at `*at`.
static void put(char *sql, size_t size, size_t *at, const char *format, const char *a, const char *b) {
    int n = snprintf(sql + *at, size - *at, format, a, b);
    if (n < 0 || (size_t)n >= size - *at) { fprintf(stderr, "sqlite-batch: statement too long\n"); exit(1); }
    *at += (size_t)n;
}

// The device upsert of Herald's writer (SQLiteDeviceStore.registration), its new values spelled
// `given` ("?%d" parameters for one row, "excluded.%s" for many).
static void upsertTail(char *sql, size_t size, size_t *at, int perRow) {
    char given[64];
    put(sql, size, at, "%s%s", " ON CONFLICT (app_id, hwid) DO UPDATE SET platform = ", perRow ? "?3" : "excluded.platform");
    for (int i = 0; i < 8; i++) {
        if (perRow) snprintf(given, sizeof given, "?%d", i + 4); else snprintf(given, sizeof given, "excluded.%s", attributes[i]);
        put(sql, size, at, ", %s = COALESCE(%s, ", attributes[i], given);
        put(sql, size, at, "%s)%s", attributes[i], "");
    }
    put(sql, size, at, "%s%s", perRow ? ", updated_at = ?12, push_token = ?13, gateway = COALESCE(?14, gateway), web_p256dh = ?15, web_auth = ?16"
        : ", updated_at = excluded.updated_at, push_token = excluded.push_token, gateway = COALESCE(excluded.gateway, gateway), "
          "web_p256dh = excluded.web_p256dh, web_auth = excluded.web_auth", ", subscribed = 1, token_invalid_reason = NULL WHERE ");
    put(sql, size, at, "%s IS NOT platform%s", perRow ? "?3" : "excluded.platform", "");
    for (int i = 0; i < 8; i++) {
        if (perRow) snprintf(given, sizeof given, "?%d", i + 4); else snprintf(given, sizeof given, "excluded.%s", attributes[i]);
        put(sql, size, at, " OR COALESCE(%s, %s)", given, attributes[i]);
        put(sql, size, at, " IS NOT %s%s", attributes[i], "");
    }
    put(sql, size, at, "%s%s", perRow ? " OR ?13 IS NOT push_token OR COALESCE(?14, gateway) IS NOT gateway OR ?15 IS NOT web_p256dh OR ?16 IS NOT web_auth"
        : " OR excluded.push_token IS NOT push_token OR COALESCE(excluded.gateway, gateway) IS NOT gateway"
          " OR excluded.web_p256dh IS NOT web_p256dh OR excluded.web_auth IS NOT web_auth",
        " OR subscribed <> 1 OR token_invalid_reason IS NOT NULL");
}

// Binds registration `n`'s 16 values from parameter `first`: what ops/bench/lua/registerDevice.lua sends.
static void bindDevice(sqlite3_stmt *statement, int first, const char *hwid, const char *token) {
    sqlite3_bind_int64(statement, first + 0, 1);
    sqlite3_bind_text(statement, first + 1, hwid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(statement, first + 2, 3);
    sqlite3_bind_text(statement, first + 3, "en", -1, SQLITE_STATIC);
    sqlite3_bind_int64(statement, first + 4, 3600);
    for (int i = 5; i <= 10; i++) sqlite3_bind_null(statement, first + i);
    sqlite3_bind_int64(statement, first + 11, 1764900000);
    sqlite3_bind_text(statement, first + 12, token, -1, SQLITE_STATIC);
    for (int i = 13; i <= 15; i++) sqlite3_bind_null(statement, first + i);
}

// Binds the tags Level (an integer) and City (a string) of device `id` from parameter `first`.
static void bindTag(sqlite3_stmt *statement, int first, sqlite3_int64 id, int city, int n) {
    sqlite3_bind_int64(statement, first + 0, id);
    sqlite3_bind_text(statement, first + 1, city ? "City" : "Level", -1, SQLITE_STATIC);
    sqlite3_bind_int64(statement, first + 2, 1);
    sqlite3_bind_int64(statement, first + 3, city ? 2 : 1);
    if (city) sqlite3_bind_null(statement, first + 4); else sqlite3_bind_int64(statement, first + 4, n % 100);
    if (city) sqlite3_bind_text(statement, first + 5, "x", -1, SQLITE_STATIC); else sqlite3_bind_null(statement, first + 5);
}

static void step(sqlite3 *db, sqlite3_stmt *statement) {
    if (sqlite3_step(statement) != SQLITE_DONE) fail(db, "step");
    sqlite3_reset(statement);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: sqlite-batch DATABASE rows|batch|batch-history REGISTRATIONS BATCH\n"); return 2; }
    int perRow = strcmp(argv[2], "rows") == 0, history = strcmp(argv[2], "batch-history") == 0;
    int total = atoi(argv[3]), batch = atoi(argv[4]);
    if ((!perRow && !history && strcmp(argv[2], "batch") != 0) || total <= 0 || batch <= 0 || batch > 500 || total % batch) {
        fprintf(stderr, "sqlite-batch: MODE is rows, batch or batch-history; BATCH (1-500) divides REGISTRATIONS\n");
        return 2;
    }
    sqlite3 *db;
    if (sqlite3_open(argv[1], &db) != SQLITE_OK) fail(db, "open");
    // The writer's settings (SQLiteConnection), without the commit's sync: CPU is what is compared.
    run(db, "PRAGMA journal_mode=WAL");
    run(db, "PRAGMA synchronous=NORMAL");
    run(db, "PRAGMA foreign_keys=ON");
    run(db, "PRAGMA cache_size=-8192");
    static char sql[1 << 20];
    size_t at = 0;
    put(sql, sizeof sql, &at, "INSERT INTO devices (%s) VALUES %s", columns, "");
    for (int row = 0; row < (perRow ? 1 : batch); row++) {
        char values[160];
        int p = row * FIELDS;
        snprintf(values, sizeof values, "%s(?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d)", row ? ", " : "",
                 p + 1, p + 2, p + 3, p + 4, p + 5, p + 6, p + 7, p + 8, p + 9, p + 10, p + 11, p + 12, p + 12, p + 13, p + 14, p + 15, p + 16);
        put(sql, sizeof sql, &at, "%s%s", values, "");
    }
    upsertTail(sql, sizeof sql, &at, perRow);
    if (!perRow) put(sql, sizeof sql, &at, "%s%s", " RETURNING id, hwid", "");
    sqlite3_stmt *devices = prepare(db, sql);
    at = 0;
    put(sql, sizeof sql, &at, "%s%s", "INSERT INTO device_tags (device_id, name, app_id, type, num, str) VALUES ", "");
    for (int row = 0; row < (perRow ? 1 : 2 * batch); row++) {
        char values[96];
        int p = row * 6;
        snprintf(values, sizeof values, "%s(?%d, ?%d, ?%d, ?%d, ?%d, ?%d)", row ? ", " : "", p + 1, p + 2, p + 3, p + 4, p + 5, p + 6);
        put(sql, sizeof sql, &at, "%s%s", values, "");
    }
    put(sql, sizeof sql, &at, "%s%s", " ON CONFLICT DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str",
        " WHERE type IS NOT excluded.type OR num IS NOT excluded.num OR str IS NOT excluded.str");
    sqlite3_stmt *tags = prepare(db, sql);
    // The first history row of each new device, `seq` 0 (SQLiteDeviceStore.recordNew).
    at = 0;
    put(sql, sizeof sql, &at, "%s%s", "INSERT INTO permission_changes (app_id, at, device_id, seq, app_version, opted_in, registered) VALUES ", "");
    for (int row = 0; row < batch; row++) {
        char values[96];
        int p = row * 3;
        snprintf(values, sizeof values, "%s(?%d, ?%d, ?%d, 0, NULL, 1, 1)", row ? ", " : "", p + 1, p + 2, p + 3);
        put(sql, sizeof sql, &at, "%s%s", values, "");
    }
    sqlite3_stmt *changes = prepare(db, sql);
    sqlite3_stmt *savepoint = prepare(db, "SAVEPOINT request"), *release = prepare(db, "RELEASE request");
    sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE"), *commit = prepare(db, "COMMIT");

    static char hwids[500][48], tokens[500][200];
    sqlite3_int64 ids[500];
    double started = cpuSeconds();
    for (int first = 0; first < total; first += batch) {
        for (int i = 0; i < batch; i++) {
            snprintf(hwids[i], sizeof hwids[i], "bench-%s-%d", argv[2], first + i);
            snprintf(tokens[i], sizeof tokens[i], "%s:%d", "APA91bHPRgkFLJu6MDp4dLU2xOxkDw9ZAPA91bHPRgkFLJu6MDp4dLU2xOxkDw9Z"
                     "APA91bHPRgkFLJu6MDp4dLU2xOxkDw9ZAPA91bHPRgkFLJu6MDp4dLU2xOxkDw9Z", first + i);
        }
        step(db, begin);
        if (perRow) {
            for (int i = 0; i < batch; i++) {
                step(db, savepoint);
                sqlite3_int64 before = sqlite3_last_insert_rowid(db);
                bindDevice(devices, 1, hwids[i], tokens[i]);
                step(db, devices);
                if (sqlite3_last_insert_rowid(db) == before) { fprintf(stderr, "sqlite-batch: %s existed\n", hwids[i]); return 1; }
                for (int city = 0; city < 2; city++) {
                    bindTag(tags, 1, sqlite3_last_insert_rowid(db), city, first + i);
                    step(db, tags);
                }
                step(db, release);
            }
        } else {
            for (int i = 0; i < batch; i++) bindDevice(devices, i * FIELDS + 1, hwids[i], tokens[i]);
            int returned = 0, result;
            // RETURNING gives its rows in no set order: each is matched to its registration by hwid.
            while ((result = sqlite3_step(devices)) == SQLITE_ROW) {
                const char *hwid = (const char *)sqlite3_column_text(devices, 1);
                int i = atoi(strrchr(hwid, '-') + 1) - first;
                if (i < 0 || i >= batch) { fprintf(stderr, "sqlite-batch: unexpected row %s\n", hwid); return 1; }
                ids[i] = sqlite3_column_int64(devices, 0);
                returned++;
            }
            if (result != SQLITE_DONE || returned != batch) fail(db, "batch upsert");
            sqlite3_reset(devices);
            for (int i = 0; i < batch; i++)
                for (int city = 0; city < 2; city++) bindTag(tags, (i * 2 + city) * 6 + 1, ids[i], city, first + i);
            step(db, tags);
            if (history) {
                for (int i = 0; i < batch; i++) {
                    sqlite3_bind_int64(changes, i * 3 + 1, 1);
                    sqlite3_bind_int64(changes, i * 3 + 2, 1764900000);
                    sqlite3_bind_int64(changes, i * 3 + 3, ids[i]);
                }
                step(db, changes);
            }
        }
        step(db, commit);
    }
    printf("%s %.2f\n", argv[2], (cpuSeconds() - started) * 1e6 / total);
    sqlite3_close_v2(db);
    return 0;
}
