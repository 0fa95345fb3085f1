// The file service's client library (fs.h).
#include "fs.h"
#include <ulib.h>
#include <netutil.h>

long fs_wait_reply(struct fs_client *fc, uint32_t rid, struct fs_msg *rep, void *rdata, uint64_t rmax)
{
	uint64_t t0 = (uint64_t)time();
	for (;;) {
		const uint8_t *p;
		uint64_t len;
		int why;
		long e = fsn_ctl_recv(&fc->net, &p, &len);
		// Every link dead for a second: the server may only be busy (its
		// disk stops the machine while it writes); wait out the timeout.
		if (e == -E_LINK && (uint64_t)time() - t0 < (uint64_t)fc->net.timeout_ms * 1000)
			continue;
		if (e < 0)
			return e;
		if (fs_msg_decode(p, len, rep, &why) < 0 || !(rep->flags & FS_F_REPLY) || rep->rid != rid) {
			fc->stale_replies++;
			continue;
		}
		if (rep->flags & FS_F_BUSY) {
			t0 = (uint64_t)time();
			continue;
		}
		uint64_t n = rep->inline_len < rmax ? rep->inline_len : rmax;
		if (n && rdata)
			memcpy(rdata, p + FS_HDR_LEN, n);
		if (rep->inline_len && fs_sum(p + FS_HDR_LEN, rep->inline_len) != rep->data_sum) {
			fc->sum_errors++;
			return -E_IO;
		}
		return rep->status;
	}
}

long fs_call(struct fs_client *fc, struct fs_msg *req, const void *data, struct fs_msg *rep, void *rdata,
	     uint64_t rmax)
{
	req->rid = ++fc->rid;
	req->flags = 0;
	if (req->inline_len)
		req->data_sum = fs_sum(data, req->inline_len);
	long e = fsn_ctl_send(&fc->net, req, data);
	return e < 0 ? e : fs_wait_reply(fc, req->rid, rep, rdata, rmax);
}

long fs_connect(struct fs_client *fc, const struct fs_cfg *cfg, uint8_t mask, uint16_t chan, const char *peers,
		uint32_t timeout_ms)
{
	memset(fc, 0, sizeof(*fc));
	long e = fsn_open(&fc->net, cfg, mask, chan, peers, 0, timeout_ms);
	if (e < 0)
		return e;
	struct fs_msg q = { .op = FS_OP_HELLO, .offset = cfg->chunk, .length = cfg->small_max,
			    .aux = cfg->streams | cfg->batch << 8 | (uint64_t)cfg->window << 16 }, r;
	e = fs_call(fc, &q, NULL, &r, NULL, 0);
	if (e < 0)
		fsn_close(&fc->net);
	return e;
}

void fs_disconnect(struct fs_client *fc, int how)
{
	if (how != FS_DISC_QUIET) {
		struct fs_msg q = { .op = how == FS_DISC_BYE ? FS_OP_BYE : FS_OP_DETACH }, r;
		fs_call(fc, &q, NULL, &r, NULL, 0);
	}
	fsn_close(&fc->net);
	for (int i = 0; i < FSC_BUFS; i++)
		if (fc->buf[i].vr > 0)
			delete_vr(fc->buf[i].vr);
	memset(fc->buf, 0, sizeof(fc->buf));
}

static long name_call(struct fs_client *fc, int op, const char *name, uint64_t flag, struct fs_msg *r)
{
	size_t n = strnlen(name, FS_NAME_MAX);
	struct fs_msg q = { .op = (uint8_t)op, .inline_len = (uint32_t)n, .offset = flag };
	return fs_call(fc, &q, name, r, NULL, 0);
}

long fs_open(struct fs_client *fc, const char *name, uint64_t *size)
{
	struct fs_msg r;
	long e = name_call(fc, FS_OP_OPEN, name, 0, &r);
	if (e == 0 && size)
		*size = r.length;
	return e < 0 ? e : (long)r.handle;
}

long fs_create(struct fs_client *fc, const char *name, int excl)
{
	struct fs_msg r;
	long e = name_call(fc, FS_OP_CREATE, name, excl ? 1 : 0, &r);
	return e < 0 ? e : (long)r.handle;
}

long fs_unlink(struct fs_client *fc, const char *name)
{
	struct fs_msg r;
	return name_call(fc, FS_OP_UNLINK, name, 0, &r);
}

static long handle_call(struct fs_client *fc, int op, long h, uint64_t len, struct fs_msg *r)
{
	struct fs_msg q = { .op = (uint8_t)op, .handle = (uint32_t)h, .length = len };
	return fs_call(fc, &q, NULL, r, NULL, 0);
}

long fs_stat(struct fs_client *fc, long h, struct fs_stat *st)
{
	struct fs_msg r;
	long e = handle_call(fc, FS_OP_STAT, h, 0, &r);
	if (e == 0)
		*st = (struct fs_stat){ .size = r.length, .mtime_us = r.aux, .version = r.offset };
	return e;
}

long fs_close(struct fs_client *fc, long h)
{
	struct fs_msg r;
	return handle_call(fc, FS_OP_CLOSE, h, 0, &r);
}

long fs_fsync(struct fs_client *fc, long h)
{
	struct fs_msg r;
	return handle_call(fc, FS_OP_FSYNC, h, 0, &r);
}

long fs_truncate(struct fs_client *fc, long h, uint64_t len)
{
	struct fs_msg r;
	return handle_call(fc, FS_OP_TRUNCATE, h, len, &r);
}

long fs_srvstats(struct fs_client *fc, struct fs_srvstats *st)
{
	struct fs_msg q = { .op = FS_OP_STATS }, r;
	memset(st, 0, sizeof(*st));
	return fs_call(fc, &q, NULL, &r, st, sizeof(*st));
}

long fs_list(struct fs_client *fc, struct fs_dirent *out, int max)
{
	static struct fs_dirent d[FS_INLINE_MAX / sizeof(struct fs_dirent)];
	int n = 0;
	for (;;) {
		struct fs_msg q = { .op = FS_OP_LIST, .offset = (uint64_t)n }, r;
		long e = fs_call(fc, &q, NULL, &r, d, sizeof(d));
		if (e < 0)
			return e;
		if (r.nchunks > sizeof(d) / sizeof(d[0]) || r.inline_len != r.nchunks * sizeof(d[0]))
			return -E_INVAL;
		for (uint32_t i = 0; i < r.nchunks && n < max; i++)
			out[n++] = d[i];
		if (!r.nchunks || r.length == 0 || n >= max) // length: entries left after these
			return n;
	}
}

// The fs buffer holding [p, p+len): its index, or -1.
static int buf_of(struct fs_client *fc, const void *p, uint64_t len)
{
	uint64_t a = (uint64_t)p;
	for (int i = 0; i < FSC_BUFS; i++)
		if (fc->buf[i].vr > 0 && a >= fc->buf[i].addr && a + len <= fc->buf[i].addr + fc->buf[i].bytes)
			return i;
	return -1;
}

void *fs_buf_alloc(struct fs_client *fc, uint64_t bytes)
{
	bytes = (bytes + 4095) & ~4095ul;
	for (int i = 0; i < FSC_BUFS && bytes && bytes <= FSC_BUF_STRIDE; i++) {
		if (fc->buf[i].vr > 0)
			continue;
		uint64_t addr = FSC_BUF_BASE + (uint64_t)i * FSC_BUF_STRIDE;
		long vr = create_vr(bytes, VR_MEM_ALL, -1);
		if (vr < 0)
			return NULL;
		if (attach_vr(vr, 0, addr) < 0) {
			delete_vr(vr);
			return NULL;
		}
		fc->buf[i].vr = vr, fc->buf[i].addr = addr, fc->buf[i].bytes = bytes;
		return (void *)addr;
	}
	return NULL;
}

void fs_buf_free(struct fs_client *fc, void *p)
{
	int i = buf_of(fc, p, 1);
	if (i >= 0) {
		delete_vr(fc->buf[i].vr);
		fc->buf[i].vr = 0;
	}
}

// The trailer of transfer rid: its checksums compared with ours.
static long check_trailer(struct fs_client *fc, uint32_t rid, uint32_t nchunks, const uint64_t *sums)
{
	static uint64_t theirs[FS_MAX_CHUNKS];
	struct fs_msg t;
	long e = fs_wait_reply(fc, rid, &t, theirs, sizeof(theirs));
	if (e < 0)
		return e;
	if (t.op != FS_OP_TRAILER || t.nchunks != nchunks || t.inline_len != nchunks * 8)
		return -E_INVAL;
	for (uint32_t i = 0; i < nchunks; i++)
		if (theirs[i] != sums[i]) {
			fc->sum_errors++;
			return -E_IO;
		}
	return 0;
}

static uint64_t sums[FS_MAX_CHUNKS];

long fs_read(struct fs_client *fc, long h, uint64_t off, void *buf, uint64_t len)
{
	struct fs_msg q = { .op = FS_OP_READ, .handle = (uint32_t)h, .offset = off, .length = len }, r;
	const struct fs_cfg *cfg = &fc->net.cfg;
	long e = fs_call(fc, &q, NULL, &r, buf, len);
	if (e < 0)
		return e;
	if (r.length > len || (r.length <= cfg->small_max && r.inline_len != r.length))
		return -E_INVAL;
	if (r.length <= cfg->small_max)
		return (long)r.length;
	uint32_t nc = fs_nchunks(off, r.length, cfg->chunk);
	if (nc != r.nchunks || nc > FS_MAX_CHUNKS)
		return -E_INVAL;
	long bad = 0;
	for (uint32_t i = 0; i < nc; i++) {
		uint64_t coff, clen;
		fs_chunk(off, r.length, cfg->chunk, i, &coff, &clen);
		e = fsn_recv_chunk(&fc->net, (int)(i % cfg->streams), q.rid, i, (uint8_t *)buf + (coff - off), clen,
				   &sums[i]);
		if (e == -E_TIMEOUT || e == -E_LINK)
			return e;
		bad = bad ? bad : e;
	}
	e = check_trailer(fc, q.rid, nc, sums);
	return bad ? bad : e < 0 ? e : (long)r.length;
}

long fs_write(struct fs_client *fc, long h, uint64_t off, const void *buf, uint64_t len)
{
	const struct fs_cfg *cfg = &fc->net.cfg;
	struct fs_msg r, q = { .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = off, .length = len };
	if (len <= cfg->small_max) {
		q.inline_len = (uint32_t)len;
		long e = fs_call(fc, &q, buf, &r, NULL, 0);
		return e < 0 ? e : (long)len;
	}
	uint32_t nc = fs_nchunks(off, len, cfg->chunk);
	if (nc > FS_MAX_CHUNKS)
		return -E_2BIG;
	q.nchunks = nc;
	long e = fs_call(fc, &q, NULL, &r, NULL, 0); // the go-ahead, or why not
	if (e < 0)
		return e;
	if (!(r.flags & FS_F_GO))
		return -E_INVAL;
	// Pages are lent when the buffer lies in them as the data in the file's
	// pages: chunks end at page boundaries of both, so no page is in two.
	int b = buf_of(fc, buf, len);
	if (b >= 0 && ((uint64_t)buf - off) % 4096)
		b = -1;
	for (uint32_t i = 0; i < nc && e == 0; i++) {
		uint64_t coff, clen;
		fs_chunk(off, len, cfg->chunk, i, &coff, &clen);
		const uint8_t *p = (const uint8_t *)buf + (coff - off);
		e = fsn_send_chunk(&fc->net, (int)(i % cfg->streams), q.rid, i, b >= 0 ? fc->buf[b].vr : 0,
				   b >= 0 ? (uint64_t)p - fc->buf[b].addr : 0, p, clen, &sums[i]);
	}
	if (e == 0) {
		struct fs_msg t = { .op = FS_OP_TRAILER, .rid = q.rid, .nchunks = nc, .inline_len = nc * 8 };
		t.data_sum = fs_sum(sums, nc * 8ul);
		e = fsn_ctl_send(&fc->net, &t, sums);
	}
	if (e == 0)
		e = fs_wait_reply(fc, q.rid, &r, NULL, 0);
	long back = fsn_return_loans(&fc->net);
	if (e == 0 && back < 0)
		e = back;
	return e < 0 ? e : (long)len;
}

void fs_cfg_args(struct fs_cfg *c, int argc, char **argv)
{
	*c = (struct fs_cfg)FS_CFG_DEFAULT;
	c->small_max = (uint32_t)arg_long(argc, argv, "small_max", c->small_max);
	c->chunk = (uint32_t)arg_long(argc, argv, "chunk", c->chunk);
	c->streams = (uint32_t)arg_long(argc, argv, "streams", c->streams);
	c->batch = (uint32_t)arg_long(argc, argv, "batch", c->batch);
	c->window = (uint32_t)arg_long(argc, argv, "window", c->window);
}

long fs_connect_args(struct fs_client *fc, int argc, char **argv, uint32_t timeout_ms)
{
	struct fs_cfg cfg;
	fs_cfg_args(&cfg, argc, argv);
	return fs_connect(fc, &cfg, nic_mask_arg(argc, argv), (uint16_t)arg_long(argc, argv, "chan", 40),
			  arg_get(argc, argv, "peer", NULL), (uint32_t)arg_long(argc, argv, "timeout_ms", timeout_ms));
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t pat_word(uint64_t seed, uint64_t w) { return mix(seed << 40 ^ w); }

void fs_pattern(uint8_t *p, uint64_t foff, uint64_t len, uint64_t seed)
{
	uint64_t x = foff, end = foff + len;
	for (; x < end && x % 8; x++)
		*p++ = (uint8_t)(pat_word(seed, x / 8) >> (x % 8 * 8));
	for (; x + 8 <= end; x += 8, p += 8) {
		uint64_t w = pat_word(seed, x / 8);
		memcpy(p, &w, 8);
	}
	for (; x < end; x++)
		*p++ = (uint8_t)(pat_word(seed, x / 8) >> (x % 8 * 8));
}

long fs_pattern_diff(const uint8_t *p, uint64_t foff, uint64_t len, uint64_t seed)
{
	uint8_t want[512];
	for (uint64_t d = 0; d < len; d += sizeof(want)) {
		uint64_t n = len - d < sizeof(want) ? len - d : sizeof(want);
		fs_pattern(want, foff + d, n, seed);
		if (memcmp(want, p + d, n))
			for (uint64_t i = 0; i < n; i++)
				if (want[i] != p[d + i])
					return (long)(d + i);
	}
	return -1;
}
