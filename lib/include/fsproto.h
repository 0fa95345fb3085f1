// The file service's wire protocol (user/fsd.c, lib/fs.c), carried over
// reliable I/O channels: one control channel per client (requests, replies,
// trailers: one packet each) and `streams` data channels that carry the
// chunks of large transfers. Shared by the server, the client library and
// the host tests; pure code, no system calls.
//
// Every control packet starts with a 64-byte header (struct fs_msg,
// little-endian, guarded by its own checksum) followed by `inline_len` bytes
// of data (a name, a small write's data, a small read's data, a listing, a
// trailer's chunk checksums).
//
// How data travels:
//  - small I/O (length <= small_max, at most FS_INLINE_MAX): the request
//    carries the data (write) or the reply does (read), one packet each way,
//    its checksum in data_sum;
//  - large I/O: cut into chunks at file offsets that are multiples of
//    `chunk` (so no page is shared by two chunks); chunk i goes on data
//    stream i % streams as ceil(len_i / FS_DATA_PKT) packets of data (each
//    stream is reliable and in order, so position tells which bytes a
//    packet holds), the first led by a FS_MARK_LEN-byte mark naming the
//    request and the chunk, padded with FS_PAD_LEN-byte filler packets to
//    a multiple of `batch` (a channel receives and sends whole batches).
//    A receiver takes packets before the mark it expects as stale (what is
//    left of a transfer its peer or itself gave up) and drops them. A
//    trailer on the control channel then carries each chunk's checksum. A write first waits for the server's go-ahead (FS_F_GO), so
//    a refused write sends no data and changes nothing; after it, the
//    server stages the chunks and applies them only once the trailer
//    checks (a wrong trailer, or a chunk that never comes, changes nothing).
//
// Checksum: Fletcher-64 over little-endian 32-bit words (the tail
// zero-padded), both sums modulo 2^32-1, seeded with the length so that
// zero bytes of different lengths differ. It detects every error burst
// shorter than 32 bits and all but 1 in 2^64 random corruptions of a chunk,
// costs two additions per word, and has no table (a CRC32C without the
// SSE4.2 instruction costs a table lookup per byte).
#ifndef LIB_FSPROTO_H
#define LIB_FSPROTO_H
#include <stdint.h>
#include <stddef.h>

#define FS_MAGIC 0x31505346u   // "FSP1"
#define FS_HDR_LEN 64
#define FS_PKT_MAX 8960        // a channel's largest payload (WIRE_MAX_PAYLOAD)
#define FS_INLINE_MAX (FS_PKT_MAX - FS_HDR_LEN) // 8896: data in one control packet
#define FS_DATA_PKT 8192       // data bytes per packet of a chunk
#define FS_PAD_LEN 8           // a filler packet's length
#define FS_MARK_LEN 32         // a chunk's mark, in front of its first data packet's data
#define FS_MARK_MAGIC 0x314d5346u // "FSM1"
#define FS_NAME_MAX 40         // a file name with its NUL
#define FS_MAX_FILE (48ul << 20) // the largest file (a region is at most 64 MiB)
#define FS_MAX_CHUNKS ((FS_INLINE_MAX) / 8) // a trailer's checksums
#define FS_MAX_STREAMS 4
// The server's limits: files in its table (a create past it: -E_NOMEM,
// counted in table_full), and files it keeps in memory at once (a region
// each, of the 64 a process may hold: the others wait on disk and are
// loaded again when used, the least recently used written back and
// dropped to make room). A handle names a table index and the file's uid.
#define FS_MAX_FILES 1024     // files a server holds
#define FS_LOADED_MAX 32      // files the server holds in memory at once
#define FS_HANDLE_IBITS 10    // handle = index | uid << FS_HANDLE_IBITS (32 bits)
_Static_assert(FS_MAX_FILES <= 1 << FS_HANDLE_IBITS, "a handle names every index");

// Operations. Requests carry FS_F_REPLY clear; replies set it and echo op and rid.
enum {
	FS_OP_HELLO = 1,    // offset=chunk, length=small_max, aux=streams|batch<<8: the settings must match
	FS_OP_OPEN,         // inline: name. Reply: handle, length=size, aux=mtime_us
	FS_OP_CREATE,       // inline: name; offset=1: exclusive (-E_EXIST if there). Reply as OPEN
	FS_OP_READ,         // handle, offset, length. Reply: length=bytes that follow (short at the
	                    // end of file), nchunks; inline data when length <= small_max, else
	                    // chunks on the data streams, then a FS_OP_TRAILER
	FS_OP_WRITE,        // handle, offset (<= size: no holes), length, inline data when small;
	                    // else nchunks, a go-ahead reply (FS_F_GO), the chunks, a trailer,
	                    // and the final reply. Reply: length=new size
	FS_OP_STAT,         // handle. Reply: length=size, aux=mtime_us, offset=version
	FS_OP_CLOSE,        // handle (checked; the server keeps no per-client state)
	FS_OP_UNLINK,       // inline: name
	FS_OP_LIST,         // offset=first index. Reply: nchunks=entries, inline: struct fs_dirent[]
	FS_OP_FSYNC,        // handle (0: everything): data, then the file table, on disk
	FS_OP_TRUNCATE,     // handle, length (<= FS_MAX_FILE): shorter cuts, longer adds zeros
	FS_OP_STATS,        // reply inline: struct fs_srvstats
	FS_OP_TRAILER,      // rid of the transfer, nchunks, inline: uint64_t sum[nchunks]
	FS_OP_BYE,          // the client is done: the server exits (tests, benchmarks)
	FS_OP_DETACH,       // the client is leaving: 1.5 s after the reply the server opens its
	                    // channels anew for the next client (user/fsd.c says why)
	FS_OP_MAX
};

#define FS_F_REPLY 0x01
#define FS_F_GO 0x02        // a large write's go-ahead: send the chunks now
#define FS_F_BUSY 0x04      // not the answer yet: the server is at the disk for this request
                            // (sent every FLUSH_PIECE bytes); the client's timeout starts again

struct fs_msg {
	uint32_t magic;
	uint8_t op, flags;
	uint16_t hdr_len;      // FS_HDR_LEN
	uint32_t rid;          // request id, echoed in the reply
	uint32_t handle;       // file table index | uid << FS_HANDLE_IBITS
	int32_t status;        // replies: 0 or -E_*
	uint32_t nchunks;
	uint64_t offset, length;
	uint32_t inline_len;   // bytes after the header in this packet
	uint32_t hsum;         // the header's Fletcher-32 (this field 0)
	uint64_t data_sum;     // checksum of the inline data
	uint64_t aux;
};
_Static_assert(sizeof(struct fs_msg) == FS_HDR_LEN, "fs_msg is the 64-byte header");

struct fs_dirent {
	char name[FS_NAME_MAX];
	uint64_t size;
};

// The server's counters (FS_OP_STATS): every refused request by cause.
struct fs_srvstats {
	uint64_t requests, replies;
	uint64_t bad_truncated;   // shorter than a header, or than its inline data
	uint64_t bad_magic;       // wrong magic or header length
	uint64_t bad_hsum;        // header checksum mismatch
	uint64_t bad_op;          // unknown operation (or a reply flag on a request)
	uint64_t bad_handle;      // unknown or stale handle
	uint64_t bad_range;       // offset past the end of the file
	uint64_t bad_overflow;    // offset + length wraps or exceeds FS_MAX_FILE
	uint64_t bad_name;        // empty, too long or not NUL-terminated
	uint64_t bad_sum;         // a data checksum mismatch (inline or chunk)
	uint64_t bad_chunks;      // chunk count, data packets or trailer not as announced, or never come
	uint64_t bad_settings;    // HELLO with other settings
	uint64_t no_space;        // the disk or the file table is full
	uint64_t bytes_written, bytes_read;   // file data
	uint64_t bytes_copied;    // data copied from receive slots into file regions
	uint64_t pages_loaned;    // file pages sent by exchange (no copy)
	uint64_t commits;         // file-table copies written
	uint64_t disk_bytes;      // file data written to the disk
	uint64_t nfiles;
	uint64_t generation;      // of the table now on disk
	uint64_t table_full;      // creates refused: FS_MAX_FILES files exist already
	uint64_t no_memory;       // a file or a write's pages did not fit in memory, even alone
	uint64_t files_loaded;    // files in the server's memory now (at most FS_LOADED_MAX)
	uint64_t loads, evictions; // files read from disk into memory; files written back and dropped
	uint64_t stale_packets;   // data packets dropped before a chunk's mark (a write given up)
	uint64_t busy_tsc;        // the server machine's busy TSC ticks when it served this request:
	                          // CPUs x elapsed less halted (sysinfo idle_tsc; under -icount guest
	                          // instructions). Only differences mean anything (make bench-fs's CPU work)
};

// The settings both ends must share.
struct fs_cfg {
	uint32_t small_max;   // inline I/O up to this many bytes (<= FS_INLINE_MAX)
	uint32_t chunk;       // large I/O is cut at multiples of this (a multiple of 4096)
	uint32_t streams;     // data channels (1..FS_MAX_STREAMS)
	uint32_t batch;       // packets per input_io/output_io on a data channel (1..128)
	uint32_t window;      // chunks a stream may have in flight (1..8)
};
#define FS_CFG_DEFAULT { .small_max = FS_INLINE_MAX, .chunk = 256 * 1024, .streams = 2, .batch = 32, .window = 2 }

// 0 when the settings are usable, -E_INVAL when not.
long fs_cfg_check(const struct fs_cfg *c);

// Fletcher-64 of n bytes (see above).
uint64_t fs_sum(const void *p, size_t n);

// Writes m (hsum computed here) into buf[0..FS_HDR_LEN).
void fs_msg_encode(void *buf, const struct fs_msg *m);
// Parses a control packet of len bytes into m: 0, or -E_INVAL with *why set
// to the counter's cause (FS_WHY_*). Checks the magic, the header length,
// the header checksum, that inline_len bytes follow, and a request's op (a
// reply echoes whatever op it answers).
enum { FS_WHY_TRUNCATED = 1, FS_WHY_MAGIC, FS_WHY_HSUM, FS_WHY_OP };
long fs_msg_decode(const void *buf, size_t len, struct fs_msg *m, int *why);

// Checks a range against a file: -E_2BIG when off + len wraps or passes
// FS_MAX_FILE, -E_RANGE when off lies past size (reads: off > size; writes
// the same: no holes). 0 otherwise.
long fs_range_check(uint64_t off, uint64_t len, uint64_t size);

// Chunk plan of a large transfer at [off, off+len): chunk boundaries at
// multiples of chunk. fs_nchunks gives their count; fs_chunk the i-th one's
// range. Data packets of a chunk: fs_chunk_pkts (padded to batch: the
// padded count in *padded).
uint32_t fs_nchunks(uint64_t off, uint64_t len, uint32_t chunk);
void fs_chunk(uint64_t off, uint64_t len, uint32_t chunk, uint32_t i, uint64_t *coff, uint64_t *clen);
uint32_t fs_chunk_pkts(uint64_t clen, uint32_t batch, uint32_t *padded);

// A chunk's mark (FS_MARK_LEN bytes, little-endian): magic, the transfer's
// request id, the chunk's index, 0, its length, and a Fletcher-64 of those
// 24 bytes. fs_mark_is: 1 when p holds the mark of (rid, k, clen).
void fs_mark_put(void *p, uint32_t rid, uint32_t k, uint64_t clen);
int fs_mark_is(const void *p, uint32_t rid, uint32_t k, uint64_t clen);

// A name from inline data: 0 when it is 1..FS_NAME_MAX-1 bytes, NUL-free
// (a trailing NUL allowed), copied NUL-terminated into out.
long fs_name_get(const void *p, size_t n, char out[FS_NAME_MAX]);
#endif
