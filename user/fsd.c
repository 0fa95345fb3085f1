// The file server: files held in regions, one per file in memory, each
// backed by its extent on the IDE disk; at most FS_LOADED_MAX files and
// cache_mb= MiB of them in memory at once (the least recently used is
// written back and dropped to make room); requests from one client over
// lib/fsnet.c's channels (protocol: lib/include/fsproto.h; on-disk layout
// and crash consistency: lib/include/fsdisk.h).
// Arguments: nics=a,b,.. (or nic=N), peer=MAC[,MAC..] (the client's, one per
// NIC), chan= (control channel, default 40; data channels follow), the
// settings small_max=, chunk=, streams=, batch=, window= (fsproto.h's
// defaults; the client must use the same), timeout_ms= (a transfer's
// packets wait that long, default 5000), disk_mb= (the area used from the
// disk's start; needed to format), format=auto|1|0 (auto: format a disk
// with no superblock of ours; 1: always; 0: never), idle_s= (exit after
// that long without a request, default 120), cache_mb= (file bytes kept in
// memory, default CACHE_MB: a soft bound, one file may pass it alone).
// Regions it holds: the tables, the staging region, 2 per channel (at most
// 10), FS_LOADED_MAX files and one more while a file moves to a larger
// extent: 45 of the 64 a process may hold.
// Prints "fsd: mounted generation G, N files" and READY fsd; serves one
// client at a time (FS_OP_DETACH: the next may come); FS_OP_BYE ends it: it prints its counters (STATS fsd ...) and exits 0 when nothing
// it held is left.
#include <ulib.h>
#include <netutil.h>
#include "fsdisk.h"
#include "fs.h"

#define META_ADDR 0x50000000000ul  // the superblock and the two table copies
#define FILE_ADDR 0x51000000000ul  // file i at FILE_ADDR + i * FILE_STRIDE
#define FILE_STRIDE 0x4000000ul    // 64 MiB: a region's largest
#define STAGE_ADDR 0x4f000000000ul // a large write's pages until its trailer checks
// A reliable channel that heard a peer's goodbye ignores that peer's next
// session (its frames are stale, and neither end sends the control frames
// that would introduce it): after a client detaches, once it has closed
// its channels, the server opens its own anew.
#define DETACH_WAIT_US 1500000
#define FLUSH_PIECE (64 * 1024ul)   // bytes per read_vr and write_vr: about 30 ms under TCG
#define CACHE_MB 96                 // cache_mb='s default

struct file {
	long vr;                     // 0: not loaded (or no extent yet)
	uint8_t *addr;
	uint64_t dirty_lo, dirty_hi; // bytes changed since the last commit
	uint64_t cap;                // the region's bytes (its extent's capacity)
	uint64_t used;               // when last used (tick): the least recent goes first
};

static struct fs_net net;
static struct fs_cfg cfg = FS_CFG_DEFAULT;
static struct fs_super sb;
static struct fs_table mt, dt;  // the table in memory, the one committed to disk
static long stage_vr;           // FS_MAX_FILE + a page, backed only during a large write
static long meta_vr;            // up to the data area: superblock, the 2 table copies
static uint8_t *meta;           // what the disk holds there (a write that failed: stale[])
static bool stale[2];           // table copy k on disk may differ from meta
static uint64_t tick, nloaded, loaded_bytes, cache_bytes;
static struct file files[FS_MAX_FILES];
static struct fs_srvstats st;
static uint64_t version, epoch_us;
static uint64_t sums[FS_MAX_CHUNKS];

static const struct fs_msg *cur; // the request being served

static uint64_t now_us(void) { return epoch_us + (uint64_t)time(); }
static long reply(const struct fs_msg *q, long status, struct fs_msg *r, const void *data);

// Between two pieces of disk I/O: the machine was deaf during the piece
// (port I/O), so its channels get a turn, and the client hears that its
// request is still being served.
static void progress(void)
{
	yield();
	if (cur) {
		struct fs_msg r = { .flags = FS_F_BUSY };
		reply(cur, 0, &r, NULL);
	}
}

// read_vr or write_vr of [lo, hi) of region vr, a piece at a time.
static long disk_pieces(long vr, uint64_t lo, uint64_t hi, int wr)
{
	for (uint64_t at = lo; at < hi; at += FLUSH_PIECE) {
		uint64_t n = hi - at < FLUSH_PIECE ? hi - at : FLUSH_PIECE;
		long e = wr ? write_vr(vr, at, n) : read_vr(vr, at, n);
		if (e < 0)
			return e;
		progress();
	}
	return 0;
}

// ---- disk: superblock, tables, files' extents

#define META_BYTES (FS_DATA_OFF) // the superblock and tables, up to the data area

static long meta_io(uint64_t off, uint64_t bytes, int wr)
{
	return wr ? write_vr(meta_vr, off, bytes) : read_vr(meta_vr, off, bytes);
}

// Writes table t into copy k: only the blocks that differ from what the
// copy holds (a commit changes a few entries: a few blocks of its 21), all
// of them after a write that failed. A crash between two blocks leaves a
// copy whose checksum fails: the other one is in force.
static long table_write(int k, const struct fs_table *t)
{
	uint8_t *d = meta + sb.table_off[k];
	const uint8_t *p = (const uint8_t *)t;
	for (uint64_t b = 0; b < sizeof(*t); b += FS_BLOCK) {
		uint64_t n = sizeof(*t) - b < FS_BLOCK ? sizeof(*t) - b : FS_BLOCK;
		if (!stale[k] && !memcmp(d + b, p + b, n))
			continue;
		memcpy(d + b, p + b, n);
		long e = meta_io(sb.table_off[k] + b, FS_BLOCK, 1);
		if (e < 0) {
			stale[k] = true;
			return e;
		}
	}
	stale[k] = false;
	return 0;
}

// Writes file i's dirty pages into its extent.
static long flush(int i)
{
	struct file *f = &files[i];
	if (!mt.e[i].flags || !f->vr || f->dirty_hi <= f->dirty_lo)
		return 0;
	uint64_t lo = f->dirty_lo & ~4095ul, hi = (f->dirty_hi + 4095) & ~4095ul;
	if (hi > mt.e[i].ext_cap)
		hi = mt.e[i].ext_cap;
	long e = disk_pieces(f->vr, lo, hi, 1);
	if (e < 0)
		return e;
	st.disk_bytes += hi - lo;
	f->dirty_lo = f->dirty_hi = 0;
	return 0;
}

// Makes file `only` (its data and its entry, or its removal) durable, or
// every file when only < 0: the data first, then a table as generation
// g+1 into the copy not in force. With one file, the table written is the
// committed one with that file's entry from memory: the other files'
// sizes and extents on disk stay those their data on disk matches.
// (Creates and unlinks commit at once, so both tables name the same files.)
static long commit(int only)
{
	static struct fs_table t;
	t = only < 0 ? mt : dt;
	for (int i = 0; i < FS_MAX_FILES; i++) {
		long e = only < 0 || i == only ? flush(i) : 0;
		if (e < 0)
			return e;
	}
	if (only >= 0)
		t.e[only] = mt.e[only], t.next_uid = mt.next_uid;
	t.gen = dt.gen + 1;
	for (int i = 0; i < FS_MAX_FILES; i++)
		if (t.e[i].flags && t.e[i].mtime > t.epoch_us)
			t.epoch_us = t.e[i].mtime;
	fs_table_seal(&t);
	long e = table_write(fs_table_slot(t.gen), &t);
	if (e < 0)
		return e;
	dt = t;
	mt.gen = t.gen, mt.nfiles = t.nfiles;
	st.commits++;
	st.generation = t.gen;
	return 0;
}

static void mark_dirty(struct file *f, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return;
	if (f->dirty_hi <= f->dirty_lo)
		f->dirty_lo = lo, f->dirty_hi = hi;
	if (lo < f->dirty_lo)
		f->dirty_lo = lo;
	if (hi > f->dirty_hi)
		f->dirty_hi = hi;
}

// ---- files in memory: at most FS_LOADED_MAX, about cache_bytes

// True while some of region vr's pages are lent to a stream (a read's
// loans that did not come back): the region must stay.
static bool lent(long vr)
{
	for (int s = 0; s < net.nstreams; s++)
		for (uint32_t w = 0; w < cfg.window; w++)
			if (net.win[s][w].src_vr == vr)
				return true;
	return false;
}

static void file_drop(int i)
{
	struct file *f = &files[i];
	if (f->vr) {
		delete_vr(f->vr); // detaches too
		nloaded--, loaded_bytes -= f->cap;
	}
	memset(f, 0, sizeof(*f));
}

// Writes back and drops the least recently used file in memory other than
// `keep`: 0, or -E_NOMEM when there is none, or the disk's error.
static long evict_one(int keep)
{
	int j = -1;
	for (int i = 0; i < FS_MAX_FILES; i++)
		if (i != keep && files[i].vr && !lent(files[i].vr) && (j < 0 || files[i].used < files[j].used))
			j = i;
	if (j < 0)
		return -E_NOMEM;
	long e = flush(j); // in place, as a commit's data would be: old or new after a crash
	if (e < 0)
		return e;
	file_drop(j);
	st.evictions++;
	return 0;
}

// Room for one more file of `bytes` in memory, besides `keep`.
static void make_room(int keep, uint64_t bytes)
{
	while ((nloaded >= FS_LOADED_MAX || loaded_bytes + bytes > cache_bytes) && evict_one(keep) == 0)
		;
}

// A region of `bytes` over the disk at `disk` (VR_MEM_ALL), evicting files
// other than `keep` while the process is out of frames or regions.
// -E_NOMEM (counted) when even alone it does not fit.
static long region_for(int keep, uint64_t bytes, long disk)
{
	make_room(keep, bytes);
	for (;;) {
		long vr = create_vr(bytes, VR_MEM_ALL, disk);
		if (vr >= 0 || (vr != -E_NOMEM && vr != -E_LIMIT))
			return vr;
		long e = evict_one(keep);
		if (e < 0) {
			st.no_memory++;
			return e == -E_NOMEM ? vr : e;
		}
	}
}

// Region of file i over its extent, loaded from disk (bytes past the size
// zeroed: a file's region holds zeros past its end, always); marks it used.
static long file_load(int i)
{
	struct fs_entry *e = &mt.e[i];
	struct file *f = &files[i];
	f->used = ++tick;
	if (f->vr || !e->ext_cap)
		return 0;
	long vr = region_for(i, e->ext_cap, (long)e->ext_off);
	if (vr < 0)
		return vr;
	uint64_t addr = FILE_ADDR + (uint64_t)i * FILE_STRIDE, used = (e->size + 4095) & ~4095ul;
	long r = attach_vr(vr, 0, addr);
	if (r >= 0 && used)
		r = disk_pieces(vr, 0, used, 0);
	if (r < 0) {
		delete_vr(vr);
		return r;
	}
	f->vr = vr, f->addr = (uint8_t *)addr, f->cap = e->ext_cap;
	nloaded++, loaded_bytes += f->cap, st.loads++;
	memset(f->addr + e->size, 0, used - e->size);
	return 0;
}

// Makes file i's extent hold at least need bytes: a larger extent where
// neither table has one, the pages moved into its region by exchange. The
// committed table still names the old extent, which stays intact.
static long file_grow(int i, uint64_t need)
{
	struct fs_entry *e = &mt.e[i];
	if (need <= e->ext_cap)
		return 0;
	uint64_t cap = need > 2 * e->ext_cap ? need : 2 * e->ext_cap;
	cap = (cap + FS_EXT_ALIGN - 1) & ~(FS_EXT_ALIGN - 1);
	if (cap > FS_MAX_FILE)
		cap = FS_MAX_FILE;
	const struct fs_table *both[2] = { &mt, &dt };
	long off = fs_extent_alloc(both, 2, &sb, cap), e2;
	if (off < 0) {
		st.no_space++;
		return off;
	}
	if ((e2 = file_load(i)) < 0)
		return e2;
	long vr = region_for(i, cap, off);
	if (vr < 0)
		return vr;
	struct file *f = &files[i];
	if (f->vr && (e2 = exchange_pmem(f->vr, vr, 0, 0, e->ext_cap / 4096)) < 0) {
		delete_vr(vr);
		return e2;
	}
	if (f->vr)
		delete_vr(f->vr);
	else
		nloaded++;
	loaded_bytes += cap - f->cap;
	f->vr = 0, f->cap = 0;
	uint64_t addr = FILE_ADDR + (uint64_t)i * FILE_STRIDE;
	if ((e2 = attach_vr(vr, 0, addr)) < 0) { // cannot fail: the address was just freed
		delete_vr(vr);
		nloaded--, loaded_bytes -= cap;
		return e2;
	}
	f->vr = vr, f->addr = (uint8_t *)addr, f->cap = cap;
	e->ext_off = (uint64_t)off, e->ext_cap = cap;
	f->dirty_lo = 0, f->dirty_hi = e->size; // everything goes to the new extent
	return 0;
}

static long format(uint64_t bytes)
{
	fs_super_init(&sb, bytes);
	memset(meta, 0, META_BYTES);
	memcpy(meta, &sb, sizeof(sb));
	long e = meta_io(0, META_BYTES, 1); // both table copies invalid
	if (e < 0)
		return e;
	fs_table_init(&mt);
	dt = mt;
	printf("fsd: formatted %lu MiB\n", bytes >> 20);
	return commit(-1);
}

static long mount(int argc, char **argv)
{
	const char *fmt = arg_get(argc, argv, "format", "auto");
	uint64_t bytes = (uint64_t)arg_long(argc, argv, "disk_mb", 0) << 20;
	meta_vr = create_vr(META_BYTES, VR_MEM_ALL, 0);
	if (meta_vr < 0 || attach_vr(meta_vr, 0, META_ADDR) < 0)
		return meta_vr < 0 ? meta_vr : -E_NOMEM;
	meta = (uint8_t *)META_ADDR;
	long e = meta_io(0, META_BYTES, 0);
	if (e < 0)
		return e;
	memcpy(&sb, meta, sizeof(sb));
	e = fs_super_check(&sb);
	if (!strcmp(fmt, "1") || (e == -E_INVAL && !strcmp(fmt, "auto"))) {
		if (bytes < FS_DATA_OFF) {
			printf("fsd: disk_mb= is needed to format\n");
			return -E_INVAL;
		}
		return format(bytes);
	}
	if (e < 0 && e != -E_INVAL && sb.version != FS_VERSION)
		printf("fsd: a disk of layout version %u; this server's is %u (format=1 formats it)\n", sb.version,
		       FS_VERSION);
	if (e < 0) {
		printf("fsd: superblock %s\n", e == -E_INVAL ? "not found" : "damaged");
		return e;
	}
	const struct fs_table *t0 = (void *)(meta + sb.table_off[0]), *t1 = (void *)(meta + sb.table_off[1]);
	long k = fs_table_pick(t0, t1, &sb);
	if (k < 0) {
		printf("fsd: no valid file table copy\n");
		return k;
	}
	mt = *(k ? t1 : t0);
	dt = mt;
	epoch_us = mt.epoch_us;
	printf("fsd: table copy %ld of generation %lu in force (the other %s)\n", k, mt.gen,
	       fs_table_check(k ? t0 : t1, &sb) == 0 ? "older" : "invalid");
	return 0;
}

// ---- requests

static long reply(const struct fs_msg *q, long status, struct fs_msg *r, const void *data)
{
	r->op = r->op ? r->op : q->op, r->rid = q->rid, r->flags |= FS_F_REPLY, r->status = (int32_t)status;
	st.replies++;
	st.pages_loaned = net.pages_loaned, st.stale_packets = net.stale_rx;
	if (r->inline_len)
		r->data_sum = fs_sum(data, r->inline_len);
	return fsn_ctl_send(&net, r, data);
}

static uint32_t handle_of(int i) { return (uint32_t)i | mt.e[i].uid << FS_HANDLE_IBITS; }

// File i of handle h, or -E_BADID (counted).
static long file_of(uint32_t h)
{
	uint32_t i = h & ((1u << FS_HANDLE_IBITS) - 1);
	if (i < FS_MAX_FILES && mt.e[i].flags && handle_of((int)i) == h)
		return i;
	st.bad_handle++;
	return -E_BADID;
}

static long range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	long e = fs_range_check(off, len, size);
	if (e == -E_2BIG)
		st.bad_overflow++;
	else if (e == -E_RANGE)
		st.bad_range++;
	return e;
}

static long op_name(const struct fs_msg *q, const uint8_t *data, struct fs_msg *r)
{
	char name[FS_NAME_MAX];
	if (fs_name_get(data, q->inline_len, name) < 0) {
		st.bad_name++;
		return -E_INVAL;
	}
	long i = fs_table_find(&mt, name);
	if (q->op == FS_OP_UNLINK) {
		if (i < 0)
			return i;
		struct fs_entry keep = mt.e[i];
		memset(&mt.e[i], 0, sizeof(mt.e[i]));
		long e = commit((int)i);
		if (e < 0) {
			mt.e[i] = keep;
			return e;
		}
		file_drop((int)i);
		return 0;
	}
	if (i < 0 && q->op == FS_OP_CREATE) {
		for (i = 0; i < FS_MAX_FILES && mt.e[i].flags; i++)
			;
		if (i == FS_MAX_FILES) { // the table's limit: a clear error, counted apart from space
			st.table_full++;
			return -E_NOMEM;
		}
		struct fs_entry *e = &mt.e[i];
		memset(e, 0, sizeof(*e));
		memcpy(e->name, name, FS_NAME_MAX);
		e->uid = mt.next_uid++, e->flags = FS_E_USED, e->mtime = now_us();
		long c = commit((int)i);
		if (c < 0) {
			memset(e, 0, sizeof(*e));
			return c;
		}
		version++;
	} else if (i >= 0 && q->op == FS_OP_CREATE && q->offset == 1)
		return -E_EXIST;
	if (i < 0)
		return i;
	r->handle = handle_of((int)i), r->length = mt.e[i].size, r->aux = mt.e[i].mtime;
	return 0;
}

// A large read: the reply, the chunks lent from the file's region on the
// streams, the trailer with their checksums; the pages come back at the end.
static long read_chunks(const struct fs_msg *q, int i, uint64_t len)
{
	struct fs_msg r = { .length = len, .nchunks = fs_nchunks(q->offset, len, cfg.chunk) };
	long e = reply(q, 0, &r, NULL);
	struct file *f = &files[i];
	for (uint32_t k = 0; e == 0 && k < r.nchunks; k++) {
		uint64_t coff, clen;
		fs_chunk(q->offset, len, cfg.chunk, k, &coff, &clen);
		e = fsn_send_chunk(&net, (int)(k % cfg.streams), q->rid, k, f->vr, coff, f->addr + coff, clen, &sums[k]);
	}
	if (e == 0) {
		struct fs_msg t = { .op = FS_OP_TRAILER, .nchunks = r.nchunks, .inline_len = r.nchunks * 8 };
		e = reply(q, 0, &t, sums);
	}
	long back = fsn_return_loans(&net);
	st.bytes_read += len;
	return e ? e : back;
}

static long op_read(const struct fs_msg *q, struct fs_msg *r, int *replied)
{
	long i = file_of(q->handle), e;
	if (i < 0)
		return i;
	struct fs_entry *fe = &mt.e[i];
	if ((e = range_ok(q->offset, q->length, fe->size)) < 0 || (e = file_load((int)i)) < 0)
		return e;
	uint64_t len = fe->size - q->offset < q->length ? fe->size - q->offset : q->length;
	if (len > cfg.small_max) {
		*replied = 1;
		return read_chunks(q, (int)i, len);
	}
	r->length = len, r->inline_len = (uint32_t)len;
	st.bytes_read += len;
	*replied = 1;
	return reply(q, 0, r, len ? files[i].addr + q->offset : NULL);
}

// The data of a write is in [off, off+len) of file i: its size grows.
static void write_done(int i, uint64_t off, uint64_t len)
{
	struct fs_entry *fe = &mt.e[i];
	if (off + len > fe->size)
		fe->size = off + len;
	fe->mtime = now_us();
	mark_dirty(&files[i], off, off + len);
	st.bytes_written += len;
	version++;
}

// Backs the first `bytes` of the staging region with frames (zeroed),
// evicting files other than `keep` while the process is out of frames.
static long stage_get(int keep, uint64_t bytes)
{
	for (;;) {
		long e = ctrl_vr(stage_vr, VR_OP_ALLOC, 0, bytes, 0, 0);
		if (e != -E_NOMEM && e != -E_LIMIT)
			return e;
		long x = evict_one(keep);
		if (x < 0) {
			st.no_memory++;
			return x == -E_NOMEM ? e : x;
		}
	}
}

// The trailer of large write q: 0 when it names q and its checksums are
// those of the chunks received (sums), else -E_INVAL or -E_IO (counted).
static long trailer_check(const struct fs_msg *q)
{
	static uint64_t theirs[FS_MAX_CHUNKS];
	const uint8_t *p;
	uint64_t n;
	struct fs_msg t;
	int why;
	long e = fsn_ctl_recv(&net, &p, &n);
	if (e < 0)
		return e;
	if (fs_msg_decode(p, n, &t, &why) < 0 || t.op != FS_OP_TRAILER || t.rid != q->rid ||
	    t.nchunks != q->nchunks || t.inline_len != q->nchunks * 8 ||
	    fs_sum(p + FS_HDR_LEN, t.inline_len) != t.data_sum) {
		st.bad_chunks++;
		return -E_INVAL;
	}
	memcpy(theirs, p + FS_HDR_LEN, t.inline_len);
	for (uint32_t k = 0; k < q->nchunks; k++)
		if (theirs[k] != sums[k]) {
			st.bad_sum++;
			return -E_IO;
		}
	return 0;
}

// A large write after the go-ahead, staged: file i's pages [lo, hi) under
// the write are built in the staging region (the bytes around the write
// copied from the file, the chunks copied from the streams), and only once
// the trailer's checksums agree do they replace the file's pages
// (exchange: no copy). A refused write changes nothing.
static long write_chunks(const struct fs_msg *q, int i)
{
	struct file *f = &files[i];
	uint64_t end = q->offset + q->length, lo = q->offset & ~4095ul, hi = (end + 4095) & ~4095ul;
	uint8_t *stage = (uint8_t *)STAGE_ADDR; // file offset x at stage + (x - lo)
	memcpy(stage, f->addr + lo, q->offset - lo);
	memcpy(stage + (end - lo), f->addr + end, hi - end);
	struct fs_msg r = { .flags = FS_F_GO };
	long e = reply(q, 0, &r, NULL), bad = 0;
	for (uint32_t k = 0; e == 0 && k < q->nchunks; k++) {
		uint64_t coff, clen;
		fs_chunk(q->offset, q->length, cfg.chunk, k, &coff, &clen);
		long c = fsn_recv_chunk(&net, (int)(k % cfg.streams), q->rid, k, stage + (coff - lo), clen, &sums[k]);
		st.bytes_copied += clen;
		if (c == -E_TIMEOUT || c == -E_LINK)
			e = c, st.bad_chunks++;
		else if (c < 0 && !bad)
			bad = c, st.bad_chunks++;
	}
	if (e == 0) {
		long t = trailer_check(q);
		e = bad ? bad : t;
	}
	if (e == 0)
		e = exchange_pmem(stage_vr, f->vr, 0, lo, (hi - lo) / 4096);
	ctrl_vr(stage_vr, VR_OP_FREE, 0, hi - lo, 0, 0); // the file's old pages, or the refused data
	if (e == 0)
		write_done(i, q->offset, q->length);
	struct fs_msg fin = { .length = mt.e[i].size };
	long s = reply(q, e, &fin, NULL);
	return e ? e : s;
}

static long op_write(const struct fs_msg *q, const uint8_t *data, struct fs_msg *r, int *replied)
{
	long i = file_of(q->handle), e;
	if (i < 0)
		return i;
	if ((e = range_ok(q->offset, q->length, mt.e[i].size)) < 0)
		return e;
	bool small = q->length <= cfg.small_max;
	if (small ? q->inline_len != q->length || q->nchunks
		  : q->inline_len || q->nchunks != fs_nchunks(q->offset, q->length, cfg.chunk)) {
		st.bad_chunks++;
		return -E_INVAL;
	}
	if ((e = file_load((int)i)) < 0 || (e = file_grow((int)i, q->offset + q->length)) < 0)
		return e;
	if (!small) {
		uint64_t lo = q->offset & ~4095ul, hi = (q->offset + q->length + 4095) & ~4095ul;
		if ((e = stage_get((int)i, hi - lo)) < 0)
			return e;
		*replied = 1;
		return write_chunks(q, (int)i);
	}
	if (q->length)
		memcpy(files[i].addr + q->offset, data, q->length);
	st.bytes_copied += q->length;
	write_done((int)i, q->offset, q->length);
	r->length = mt.e[i].size;
	return 0;
}

static long op_truncate(const struct fs_msg *q)
{
	long i = file_of(q->handle), e;
	if (i < 0)
		return i;
	struct fs_entry *fe = &mt.e[i];
	if (q->length > FS_MAX_FILE) {
		st.bad_overflow++;
		return -E_2BIG;
	}
	if ((e = file_load((int)i)) < 0 || (e = file_grow((int)i, q->length)) < 0)
		return e;
	struct file *f = &files[i];
	if (q->length < fe->size && f->vr) // zeros past the end, in memory and (at the commit) on disk
		memset(f->addr + q->length, 0, fe->size - q->length);
	mark_dirty(f, q->length < fe->size ? q->length : fe->size, q->length > fe->size ? q->length : fe->size);
	fe->size = q->length, fe->mtime = now_us();
	version++;
	return commit((int)i);
}

static long op_list(const struct fs_msg *q, struct fs_msg *r, struct fs_dirent *d)
{
	uint32_t n = 0, seen = 0, max = FS_INLINE_MAX / sizeof(*d);
	uint64_t left = 0;
	for (int i = 0; i < FS_MAX_FILES; i++) {
		if (!mt.e[i].flags || seen++ < q->offset)
			continue;
		if (n == max) {
			left++;
			continue;
		}
		memset(&d[n], 0, sizeof(d[n]));
		memcpy(d[n].name, mt.e[i].name, FS_NAME_MAX);
		d[n++].size = mt.e[i].size;
	}
	r->nchunks = n, r->length = left, r->inline_len = n * (uint32_t)sizeof(*d);
	return 0;
}

static bool same_cfg(const struct fs_msg *q)
{
	return q->offset == cfg.chunk && q->length == cfg.small_max &&
	       q->aux == (cfg.streams | cfg.batch << 8 | (uint64_t)cfg.window << 16);
}

// One request: decode, act, reply. Returns 1 after FS_OP_BYE, 2 after FS_OP_DETACH.
static int serve(const uint8_t *p, uint64_t len)
{
	static struct fs_dirent d[FS_INLINE_MAX / sizeof(struct fs_dirent)];
	struct fs_msg q, r;
	int why, replied = 0;
	const void *rdata = NULL;
	memset(&r, 0, sizeof(r));
	st.requests++;
	long e = fs_msg_decode(p, len, &q, &why);
	if (e == 0 && (q.flags & FS_F_REPLY))
		why = FS_WHY_OP, e = -E_INVAL;
	if (e < 0) {
		uint64_t *c[] = { NULL, &st.bad_truncated, &st.bad_magic, &st.bad_hsum, &st.bad_op };
		(*c[why])++;
		reply(&q, why == FS_WHY_OP ? -E_NOSYS : -E_INVAL, &r, NULL);
		return 0;
	}
	const uint8_t *data = p + FS_HDR_LEN;
	if (q.inline_len && fs_sum(data, q.inline_len) != q.data_sum) {
		st.bad_sum++;
		reply(&q, -E_IO, &r, NULL);
		return 0;
	}
	cur = &q;
	switch (q.op) {
	case FS_OP_HELLO:
		e = same_cfg(&q) ? 0 : -E_INVAL;
		st.bad_settings += e < 0;
		break;
	case FS_OP_OPEN:
	case FS_OP_CREATE:
	case FS_OP_UNLINK:
		e = op_name(&q, data, &r);
		break;
	case FS_OP_READ:
		e = op_read(&q, &r, &replied);
		break;
	case FS_OP_WRITE:
		e = op_write(&q, data, &r, &replied);
		break;
	case FS_OP_STAT:
		if ((e = file_of(q.handle)) >= 0)
			r.length = mt.e[e].size, r.aux = mt.e[e].mtime, r.offset = version, e = 0;
		break;
	case FS_OP_CLOSE:
		e = file_of(q.handle) < 0 ? -E_BADID : 0;
		break;
	case FS_OP_FSYNC:
		e = !q.handle ? commit(-1) : (e = file_of(q.handle)) < 0 ? e : commit((int)e);
		break;
	case FS_OP_TRUNCATE:
		e = op_truncate(&q);
		break;
	case FS_OP_LIST:
		e = op_list(&q, &r, d);
		rdata = d;
		break;
	case FS_OP_STATS: {
		struct sysinfo si;
		uint64_t now = rdtsc();
		sysinfo(&si);
		st.busy_tsc = (si.ncpu ? si.ncpu : 1) * now - si.idle_tsc;
		st.nfiles = mt.nfiles, st.files_loaded = nloaded;
		r.inline_len = sizeof(st);
		rdata = &st;
		e = 0;
		break;
	}
	case FS_OP_BYE:
	case FS_OP_DETACH:
		e = 0;
		break;
	default: // a trailer with no write before it
		st.bad_chunks++;
		e = -E_INVAL;
	}
	cur = NULL;
	if (e < 0)
		r.inline_len = 0;
	if (!replied)
		reply(&q, e, &r, rdata);
	else if (e < 0)
		printf("fsd: op %u rid %u: %ld (%s)\n", q.op, q.rid, e, err_name(e));
	return q.op == FS_OP_BYE ? 1 : q.op == FS_OP_DETACH ? 2 : 0;
}

static void print_stats(void)
{
	printf("STATS fsd requests=%lu replies=%lu truncated=%lu magic=%lu hsum=%lu op=%lu handle=%lu range=%lu "
	       "overflow=%lu name=%lu sum=%lu chunks=%lu settings=%lu no_space=%lu written=%lu read=%lu "
	       "copied=%lu loaned_pages=%lu commits=%lu disk_bytes=%lu files=%u generation=%lu table_full=%lu "
	       "no_memory=%lu loaded=%lu loads=%lu evictions=%lu stale=%lu\n",
	       st.requests, st.replies, st.bad_truncated, st.bad_magic, st.bad_hsum, st.bad_op, st.bad_handle,
	       st.bad_range, st.bad_overflow, st.bad_name, st.bad_sum, st.bad_chunks, st.bad_settings, st.no_space,
	       st.bytes_written, st.bytes_read, st.bytes_copied, net.pages_loaned, st.commits, st.disk_bytes,
	       mt.nfiles, mt.gen, st.table_full, st.no_memory, nloaded, st.loads, st.evictions,
	       net.stale_rx);
}

int main(int argc, char **argv)
{
	fs_cfg_args(&cfg, argc, argv);
	uint64_t idle_us = (uint64_t)arg_long(argc, argv, "idle_s", 120) * 1000000;
	cache_bytes = (uint64_t)arg_long(argc, argv, "cache_mb", CACHE_MB) << 20;
	long e = mount(argc, argv);
	if (e < 0) {
		printf("fsd: mount: %ld (%s)\n", e, err_name(e));
		return 1;
	}
	stage_vr = create_vr(FS_MAX_FILE + 4096, VR_MEM_NONE, -1);
	if (stage_vr < 0 || attach_vr(stage_vr, 0, STAGE_ADDR) < 0) {
		printf("fsd: staging region: %ld (%s)\n", stage_vr, err_name(stage_vr));
		return 1;
	}
	st.generation = mt.gen;
	printf("fsd: mounted generation %lu, %u files\n", mt.gen, mt.nfiles);
	uint8_t mask = nic_mask_arg(argc, argv);
	uint16_t chan = (uint16_t)arg_long(argc, argv, "chan", 40);
	const char *peer = arg_get(argc, argv, "peer", NULL);
	uint32_t timeout_ms = (uint32_t)arg_long(argc, argv, "timeout_ms", 5000);
	e = fsn_open(&net, &cfg, mask, chan, peer, 0, timeout_ms);
	if (e < 0) {
		printf("fsd: channels: %ld (%s)\n", e, err_name(e));
		return 1;
	}
	printf("READY fsd streams=%u chunk=%u small_max=%u batch=%u\n", cfg.streams, cfg.chunk, cfg.small_max,
	       cfg.batch);
	uint64_t last = (uint64_t)time();
	int done = 0;
	while (!done && (uint64_t)time() - last < idle_us) {
		const uint8_t *p;
		uint64_t len;
		e = fsn_ctl_recv(&net, &p, &len);
		if (e == 0) {
			done = serve(p, len);
			last = (uint64_t)time();
		}
		if (done == 2) { // the next client meets fresh channels
			sleep(DETACH_WAIT_US); // after the client's own goodbye
			fsn_close(&net);
			if ((e = fsn_open(&net, &cfg, mask, chan, peer, 0, timeout_ms)) < 0) {
				printf("fsd: channels again: %ld (%s)\n", e, err_name(e));
				break;
			}
			printf("fsd: client detached, channels open again\n");
			done = 0;
		}
	}
	print_stats();
	e = commit(-1);
	if (e < 0)
		printf("fsd: the last commit: %ld (%s)\n", e, err_name(e));
	fsn_close(&net);
	for (int i = 0; i < FS_MAX_FILES; i++)
		file_drop(i);
	delete_vr(stage_vr);
	delete_vr(meta_vr);
	printf("fsd: %s\n", done ? "bye" : "idle too long");
	return done && e == 0 ? 0 : 1;
}
