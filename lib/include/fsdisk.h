// The file service's on-disk layout (user/fsd.c), pure code shared with the
// host tests. The disk (or the part of it from `base`) holds, in 4 KiB blocks:
//
//   base + 0          superblock (struct fs_super): magic, layout, checksum
//   base + 4 KiB      file table copy 0 (struct fs_table, FS_MAX_FILES
//                     entries: 84 KiB)
//   base + 88 KiB     file table copy 1
//   base + 256 KiB .. data: one extent per file, page-aligned, contiguous
//
// A file table names every file: name, size, extent (disk offset and
// capacity), mtime, uid. Each copy carries a generation and a checksum over
// itself. A commit writes generation g+1 into copy (g+1) % 2, the copy NOT
// holding the table in force, so a crash mid-commit leaves the other copy
// whole. At start the valid copy (magic, checksum, every entry sane) of the
// higher generation wins.
//
// Crash consistency: the server writes a file's dirty data into its extent
// first and the table after (fsync; a file dropped from memory to make room
// has its dirty data written too, without the table). An extent named by the table on disk
// is never reused for another file until a table that no longer names it is
// on disk: allocation avoids the extents of both the committed table and
// the one in memory. A file that grows past its extent gets a new extent
// (its pages moved there by exchange, no copy), so the committed table still
// names the old one, intact. What is durable after fsync returns: the
// file's bytes and size, and every create, unlink and truncate before it.
// After a crash: the last committed table; a file's bytes written since
// its last fsync may be old or new, range by range, within its extent.
#ifndef LIB_FSDISK_H
#define LIB_FSDISK_H
#include <stdint.h>
#include "fsproto.h"

#define FS_BLOCK 4096ul

#define FS_TABLE_BYTES (21 * FS_BLOCK) // a table copy's blocks (sizeof(struct fs_table), rounded up)
#define FS_TABLE_OFF(i) (FS_BLOCK + (uint64_t)(i) * FS_TABLE_BYTES)
#define FS_DATA_OFF (256ul * 1024)
#define FS_EXT_ALIGN (64ul * 1024) // extents grow in these steps (a file with data has one at least)
#define FS_VERSION 2               // 1: 64 files, 8 KiB tables
#define FS_E_USED 1u

struct fs_super {
	char magic[8];        // "TNDRFS01"
	uint32_t version, block;
	uint64_t disk_bytes;  // the area the service may use, from base
	uint64_t table_off[2], table_bytes, data_off;
	uint32_t max_files, pad;
	uint64_t sum;         // fs_sum of the bytes before it
};

struct fs_entry {
	char name[FS_NAME_MAX];
	uint64_t size, ext_off, ext_cap; // bytes; ext_off from base, 0 with ext_cap 0: none yet
	uint64_t mtime;       // the server's microseconds since its boot (plus the table's epoch)
	uint32_t uid, flags;  // uid: unique per table history; FS_E_USED
};

struct fs_table {
	char magic[8];        // "TNDRFSTB"
	uint64_t gen;
	uint32_t next_uid, nfiles;
	uint64_t epoch_us;    // mtime base: the largest mtime committed (clocks restart at boot)
	uint64_t sum;         // fs_sum of the whole table with this field 0
	struct fs_entry e[FS_MAX_FILES];
};
_Static_assert(sizeof(struct fs_table) <= FS_TABLE_BYTES && sizeof(struct fs_table) > FS_TABLE_BYTES - FS_BLOCK,
	       "a table copy fills its blocks");
_Static_assert(FS_TABLE_OFF(2) <= FS_DATA_OFF, "tables before the data");

// A fresh superblock for a disk area of disk_bytes; an empty table (gen 0).
void fs_super_init(struct fs_super *s, uint64_t disk_bytes);
void fs_table_init(struct fs_table *t);
// 0 when the superblock is ours and whole; -E_INVAL (not formatted) or -E_IO (damaged).
long fs_super_check(const struct fs_super *s);
// Seals the table: its checksum.
void fs_table_seal(struct fs_table *t);
// 0 when the copy is whole and sane for s: magic, checksum, every used
// entry with a NUL-terminated non-empty name, size <= cap <= FS_MAX_FILE,
// a page-aligned extent inside the data area, no two extents overlapping,
// no two names or uids alike. -E_IO otherwise.
long fs_table_check(const struct fs_table *t, const struct fs_super *s);
// Of two copies read from disk, the index (0, 1) of the valid one with the
// higher generation, or -E_IO when neither is valid.
long fs_table_pick(const struct fs_table *t0, const struct fs_table *t1, const struct fs_super *s);
// Which copy the commit of generation gen goes to.
static inline int fs_table_slot(uint64_t gen) { return (int)(gen & 1); }
// The first disk offset (from the data area up) where `bytes` (a multiple of
// FS_BLOCK) fit without touching an extent used in any of the n tables
// (n <= 2; -E_INVAL else); -E_NOMEM when none. O(n * FS_MAX_FILES log).
long fs_extent_alloc(const struct fs_table *const *t, int n, const struct fs_super *s, uint64_t bytes);
// The used entry named name, or -E_NOENT.
long fs_table_find(const struct fs_table *t, const char *name);
#endif
