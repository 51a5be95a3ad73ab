#ifndef HERALD_SQLITE_VFS_H
#define HERALD_SQLITE_VFS_H

/// Registers the "herald" VFS (once; later calls only return the result of the first): the
/// system's default VFS, except that a connection's writes to its WAL file are gathered in memory
/// and written with one system call when the transaction's commit frame is complete, or earlier
/// whenever SQLite reads, syncs, truncates or measures the file, or writes elsewhere in it
/// (herald_vfs.c says why that is safe).
/// Returns SQLITE_OK, or SQLite's error code.
int herald_vfs_register(void);

/// The VFS's name, for sqlite3_open_v2.
extern const char *const herald_vfs_name;

#endif
