// The "herald" VFS: the default VFS with the WAL's writes gathered per commit (see herald_vfs.h).
//
// SQLite writes each WAL frame with two calls, its 24-byte header and then its page, so a commit of
// N pages costs 2N pwrite calls, and each call's page-cache work is done for the partial page of a
// header too. Here the writes that follow each other in a WAL file are copied into a buffer and
// written together. What a reader of the file could see never changes: every read, sync, size,
// truncation, file control and close of the file writes the buffer out first, and so does the
// commit frame's page (its header names the database size after the commit, which no other frame
// does), before SQLite goes on to sync the WAL or publish the commit in the WAL index; an error
// there fails the commit as a failed write would. A crash loses only what no commit has published.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "herald_vfs.h"

const char *const herald_vfs_name = "herald";

/// The most a file gathers before it writes: larger commits write in pieces of this size. The unix
/// VFS writes less than 128 KiB per call (it cuts the length to 17 bits), so this stays below that.
#define GATHER_LIMIT (124 * 1024)
/// The size of a WAL frame header.
#define FRAME_HEADER 24

typedef struct HeraldFile {
    sqlite3_file base;
    /// The default VFS's file, right after this struct in the same allocation.
    sqlite3_file *real;
    int isWAL;
    /// Bytes gathered for offset `start` onwards; `buffer` is allocated at the first write.
    unsigned char *buffer;
    int length;
    sqlite3_int64 start;
    /// The frame header just gathered was a commit frame's: its page ends the commit.
    int commitNext;
} HeraldFile;

static sqlite3_vfs *defaultVFS;
static sqlite3_vfs heraldVFS;
static sqlite3_io_methods heraldMethods;

static int flush(HeraldFile *file) {
    if (file->length == 0) return SQLITE_OK;
    int length = file->length;
    file->length = 0;
    return file->real->pMethods->xWrite(file->real, file->buffer, length, file->start);
}

/// The default VFS's file behind `handle`.
static inline sqlite3_file *realFile(sqlite3_file *handle) { return ((HeraldFile *)handle)->real; }

static int heraldClose(sqlite3_file *handle) {
    HeraldFile *file = (HeraldFile *)handle;
    int rc = flush(file);
    int closed = file->real->pMethods->xClose(file->real);
    free(file->buffer);
    file->buffer = 0;
    return rc != SQLITE_OK ? rc : closed;
}

static int heraldRead(sqlite3_file *handle, void *out, int amount, sqlite3_int64 offset) {
    int rc = flush((HeraldFile *)handle);
    return rc != SQLITE_OK ? rc : realFile(handle)->pMethods->xRead(realFile(handle), out, amount, offset);
}

static int heraldWrite(sqlite3_file *handle, const void *data, int amount, sqlite3_int64 offset) {
    HeraldFile *file = (HeraldFile *)handle;
    if (!file->isWAL) return file->real->pMethods->xWrite(file->real, data, amount, offset);
    // A commit frame's header (bytes 4-7: the database size in pages after the commit, 0 in every
    // other frame) means that the next write, its page, ends the commit.
    const unsigned char *bytes = data;
    int endsCommit = file->commitNext;
    file->commitNext = amount == FRAME_HEADER && (bytes[4] | bytes[5] | bytes[6] | bytes[7]) != 0;
    if (file->length > 0 && (offset != file->start + file->length || file->length + amount > GATHER_LIMIT)) {
        int rc = flush(file);
        if (rc != SQLITE_OK) return rc;
    }
    if (file->buffer == 0 && amount <= GATHER_LIMIT) file->buffer = malloc(GATHER_LIMIT);
    if (file->buffer == 0 || amount > GATHER_LIMIT) return file->real->pMethods->xWrite(file->real, data, amount, offset);
    if (file->length == 0) file->start = offset;
    memcpy(file->buffer + file->length, data, (size_t)amount);
    file->length += amount;
    return endsCommit ? flush(file) : SQLITE_OK;
}

static int heraldTruncate(sqlite3_file *handle, sqlite3_int64 size) {
    int rc = flush((HeraldFile *)handle);
    return rc != SQLITE_OK ? rc : realFile(handle)->pMethods->xTruncate(realFile(handle), size);
}

static int heraldSync(sqlite3_file *handle, int flags) {
    int rc = flush((HeraldFile *)handle);
    return rc != SQLITE_OK ? rc : realFile(handle)->pMethods->xSync(realFile(handle), flags);
}

static int heraldFileSize(sqlite3_file *handle, sqlite3_int64 *size) {
    int rc = flush((HeraldFile *)handle);
    return rc != SQLITE_OK ? rc : realFile(handle)->pMethods->xFileSize(realFile(handle), size);
}

static int heraldLock(sqlite3_file *handle, int level) {
    return realFile(handle)->pMethods->xLock(realFile(handle), level);
}

static int heraldUnlock(sqlite3_file *handle, int level) {
    return realFile(handle)->pMethods->xUnlock(realFile(handle), level);
}

static int heraldCheckReservedLock(sqlite3_file *handle, int *out) {
    return realFile(handle)->pMethods->xCheckReservedLock(realFile(handle), out);
}

static int heraldFileControl(sqlite3_file *handle, int op, void *argument) {
    HeraldFile *file = (HeraldFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    rc = file->real->pMethods->xFileControl(file->real, op, argument);
    // The VFS stack, outermost first, as shims name themselves.
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {
        char **name = argument;
        *name = sqlite3_mprintf("%s/%z", herald_vfs_name, *name);
    }
    return rc;
}

static int heraldSectorSize(sqlite3_file *handle) {
    return realFile(handle)->pMethods->xSectorSize(realFile(handle));
}

static int heraldDeviceCharacteristics(sqlite3_file *handle) {
    return realFile(handle)->pMethods->xDeviceCharacteristics(realFile(handle));
}

static int heraldShmMap(sqlite3_file *handle, int region, int size, int extend, void volatile **out) {
    return realFile(handle)->pMethods->xShmMap(realFile(handle), region, size, extend, out);
}

static int heraldShmLock(sqlite3_file *handle, int offset, int count, int flags) {
    return realFile(handle)->pMethods->xShmLock(realFile(handle), offset, count, flags);
}

static void heraldShmBarrier(sqlite3_file *handle) {
    // Called on the database file's handle (the WAL index is its), which never gathers.
    realFile(handle)->pMethods->xShmBarrier(realFile(handle));
}

static int heraldShmUnmap(sqlite3_file *handle, int deleteFlag) {
    return realFile(handle)->pMethods->xShmUnmap(realFile(handle), deleteFlag);
}

static int heraldFetch(sqlite3_file *handle, sqlite3_int64 offset, int amount, void **out) {
    int rc = flush((HeraldFile *)handle);
    return rc != SQLITE_OK ? rc : realFile(handle)->pMethods->xFetch(realFile(handle), offset, amount, out);
}

static int heraldUnfetch(sqlite3_file *handle, sqlite3_int64 offset, void *pointer) {
    return realFile(handle)->pMethods->xUnfetch(realFile(handle), offset, pointer);
}

static int heraldOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *handle, int flags, int *outFlags) {
    (void)vfs;
    HeraldFile *file = (HeraldFile *)handle;
    memset(file, 0, sizeof(HeraldFile));
    file->real = (sqlite3_file *)(file + 1);
    int rc = defaultVFS->xOpen(defaultVFS, name, file->real, flags, outFlags);
    // SQLite calls xClose only on a file whose pMethods is set, which this one's is not until here.
    if (rc != SQLITE_OK) {
        if (file->real->pMethods != 0) file->real->pMethods->xClose(file->real);
        return rc;
    }
    file->isWAL = (flags & SQLITE_OPEN_WAL) != 0;
    file->base.pMethods = &heraldMethods;
    return SQLITE_OK;
}

static int heraldDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    return defaultVFS->xDelete(defaultVFS, name, syncDirectory);
}

static int heraldAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return defaultVFS->xAccess(defaultVFS, name, flags, out);
}

static int heraldFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return defaultVFS->xFullPathname(defaultVFS, name, size, out);
}

static void *heraldDlOpen(sqlite3_vfs *vfs, const char *name) { (void)vfs; return defaultVFS->xDlOpen(defaultVFS, name); }
static void heraldDlError(sqlite3_vfs *vfs, int size, char *out) { (void)vfs; defaultVFS->xDlError(defaultVFS, size, out); }
static void (*heraldDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return defaultVFS->xDlSym(defaultVFS, library, symbol);
}
static void heraldDlClose(sqlite3_vfs *vfs, void *library) { (void)vfs; defaultVFS->xDlClose(defaultVFS, library); }
static int heraldRandomness(sqlite3_vfs *vfs, int size, char *out) { (void)vfs; return defaultVFS->xRandomness(defaultVFS, size, out); }
static int heraldSleep(sqlite3_vfs *vfs, int microseconds) { (void)vfs; return defaultVFS->xSleep(defaultVFS, microseconds); }
static int heraldCurrentTime(sqlite3_vfs *vfs, double *out) { (void)vfs; return defaultVFS->xCurrentTime(defaultVFS, out); }
static int heraldGetLastError(sqlite3_vfs *vfs, int size, char *out) { (void)vfs; return defaultVFS->xGetLastError(defaultVFS, size, out); }
static int heraldCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return defaultVFS->xCurrentTimeInt64(defaultVFS, out);
}

static int registered = SQLITE_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void registerOnce(void) {
    defaultVFS = sqlite3_vfs_find(0);
    if (defaultVFS == 0 || defaultVFS->iVersion < 2) return;
    heraldMethods = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = heraldClose, .xRead = heraldRead, .xWrite = heraldWrite, .xTruncate = heraldTruncate,
        .xSync = heraldSync, .xFileSize = heraldFileSize, .xLock = heraldLock, .xUnlock = heraldUnlock,
        .xCheckReservedLock = heraldCheckReservedLock, .xFileControl = heraldFileControl,
        .xSectorSize = heraldSectorSize, .xDeviceCharacteristics = heraldDeviceCharacteristics,
        .xShmMap = heraldShmMap, .xShmLock = heraldShmLock, .xShmBarrier = heraldShmBarrier,
        .xShmUnmap = heraldShmUnmap, .xFetch = heraldFetch, .xUnfetch = heraldUnfetch,
    };
    heraldVFS = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(HeraldFile) + defaultVFS->szOsFile,
        .mxPathname = defaultVFS->mxPathname,
        .zName = herald_vfs_name,
        .xOpen = heraldOpen, .xDelete = heraldDelete, .xAccess = heraldAccess, .xFullPathname = heraldFullPathname,
        .xDlOpen = heraldDlOpen, .xDlError = heraldDlError, .xDlSym = heraldDlSym, .xDlClose = heraldDlClose,
        .xRandomness = heraldRandomness, .xSleep = heraldSleep, .xCurrentTime = heraldCurrentTime,
        .xGetLastError = heraldGetLastError, .xCurrentTimeInt64 = heraldCurrentTimeInt64,
    };
    registered = sqlite3_vfs_register(&heraldVFS, 0);
}

int herald_vfs_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}
