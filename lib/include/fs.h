// The file service's client library (lib/fs.c): calls on files a server
// (user/fsd.c) holds, over lib/fsnet.c's channels. No cache: every call is
// a request to the server and its reply, so a read that starts after a
// write completed (from any client) sees it, and stat shows its size.
// Calls return 0 (or a handle, a byte count) or -E_*: the server's status
// (-E_NOENT, -E_EXIST, -E_BADID bad handle, -E_RANGE offset past the end,
// -E_2BIG size over FS_MAX_FILE, -E_NOMEM disk, table (FS_MAX_FILES) or the
// server's memory full, -E_IO a
// checksum failed), or the transport's (-E_TIMEOUT no reply within the
// timeout: the server is dead or unreachable; -E_LINK every link to it
// dead). Data from fs_buf_alloc'd buffers is sent by page loan (no copy).
#ifndef LIB_FS_H
#define LIB_FS_H
#include <stdint.h>
#include "fsnet.h"

#define FSC_BUFS 8
#define FSC_BUF_BASE 0x90000000000ul
#define FSC_BUF_STRIDE 0x10000000ul // 256 MiB apart

struct fs_stat {
	uint64_t size, mtime_us, version;
};

struct fs_client {
	struct fs_net net;
	uint32_t rid;
	struct { long vr; uint64_t addr, bytes; } buf[FSC_BUFS];
	uint64_t stale_replies;  // replies to an earlier request (dropped)
	uint64_t sum_errors;     // data that arrived with a wrong checksum
};

// Opens the channels (fsn_open) and says HELLO with cfg: the server
// refuses other settings with -E_INVAL.
long fs_connect(struct fs_client *fc, const struct fs_cfg *cfg, uint8_t mask, uint16_t chan, const char *peers,
		uint32_t timeout_ms);
// Closes everything, first telling the server: FS_DISC_DETACH (the client
// leaves; the server waits for the next), FS_DISC_BYE (the server exits), or
// nothing (FS_DISC_QUIET: the server is known to be gone).
enum { FS_DISC_DETACH, FS_DISC_BYE, FS_DISC_QUIET };
void fs_disconnect(struct fs_client *fc, int how);

long fs_open(struct fs_client *fc, const char *name, uint64_t *size);
long fs_create(struct fs_client *fc, const char *name, int excl);
long fs_read(struct fs_client *fc, long h, uint64_t off, void *buf, uint64_t len);
long fs_write(struct fs_client *fc, long h, uint64_t off, const void *buf, uint64_t len);
long fs_stat(struct fs_client *fc, long h, struct fs_stat *st);
long fs_close(struct fs_client *fc, long h);
long fs_unlink(struct fs_client *fc, const char *name);
long fs_list(struct fs_client *fc, struct fs_dirent *out, int max);
long fs_fsync(struct fs_client *fc, long h);
long fs_truncate(struct fs_client *fc, long h, uint64_t len);
long fs_srvstats(struct fs_client *fc, struct fs_srvstats *st);

// A buffer of bytes (rounded to pages) in a region of its own: fs_write
// lends its pages instead of copying. NULL when no region could be made.
void *fs_buf_alloc(struct fs_client *fc, uint64_t bytes);
void fs_buf_free(struct fs_client *fc, void *p);

// One request and its reply (rid set here); rdata gets up to rmax bytes of
// the reply's inline data. The reply's status, or a transport error.
long fs_call(struct fs_client *fc, struct fs_msg *req, const void *data, struct fs_msg *rep, void *rdata,
	     uint64_t rmax);
// The reply to request rid (replies to others are dropped and counted).
long fs_wait_reply(struct fs_client *fc, uint32_t rid, struct fs_msg *rep, void *rdata, uint64_t rmax);

// The settings from the arguments small_max=, chunk=, streams=, batch=,
// window= (defaults FS_CFG_DEFAULT), as the server takes them.
void fs_cfg_args(struct fs_cfg *c, int argc, char **argv);
// fs_connect with fs_cfg_args's settings and nic= (the NIC mask), chan=
// (default 40), peer= and timeout_ms= (default timeout_ms) from the arguments.
long fs_connect_args(struct fs_client *fc, int argc, char **argv, uint32_t timeout_ms);
// Test data: the byte at file offset x is byte x % 8 of a 64-bit mix of
// seed and x / 8, so any range of a file can be made or checked alone.
void fs_pattern(uint8_t *p, uint64_t foff, uint64_t len, uint64_t seed);
// The offset of the first byte of p[0..len) that differs from the pattern, or -1.
long fs_pattern_diff(const uint8_t *p, uint64_t foff, uint64_t len, uint64_t seed);
#endif
