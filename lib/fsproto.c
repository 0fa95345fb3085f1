// The file service's protocol codec, checksum and checks (fsproto.h).
#include "fsproto.h"
#include "err.h"
#include <string.h>

#define M32 0xffffffffull

// Two sums of 32-bit words modulo 2^32-1, reduced every 16384 words: a
// stays below 2^46 and b below 2^60 in between. Words are read with
// __builtin_memcpy, a load each: the programs are built -ffreestanding,
// where a plain memcpy is a call of lib/string.c's byte loop (it cost about
// 9 instructions a byte, most of the service's CPU work).
uint64_t fs_sum(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t a = (uint32_t)n, b = (uint32_t)(n >> 32);
	while (n >= 4) {
		size_t words = n / 4 > 16384 ? 16384 : n / 4, i = 0;
		for (; i + 4 <= words; i += 4, s += 16) { // four words a turn: one loop test per 16 bytes
			uint32_t w[4];
			__builtin_memcpy(w, s, 16);
			a += w[0], b += a;
			a += w[1], b += a;
			a += w[2], b += a;
			a += w[3], b += a;
		}
		for (; i < words; i++, s += 4) {
			uint32_t w;
			__builtin_memcpy(&w, s, 4);
			a += w;
			b += a;
		}
		n -= words * 4;
		a %= M32, b %= M32;
	}
	if (n) {
		uint32_t w = 0;
		memcpy(&w, s, n);
		a = (a + w) % M32;
		b = (b + a) % M32;
	}
	return b << 32 | a;
}

// Fletcher-32 (16-bit words, sums modulo 65535) of the header with hsum
// 0: it fits the field and, unlike a fold of the 64-bit sum, changes with
// every single-bit error.
static uint32_t hdr_sum(const struct fs_msg *m)
{
	struct fs_msg t = *m;
	t.hsum = 0;
	const uint8_t *p = (const uint8_t *)&t;
	uint32_t a = 0, b = 0;
	for (size_t i = 0; i < sizeof(t); i += 2) {
		a = (a + (uint32_t)(p[i] | p[i + 1] << 8)) % 65535;
		b = (b + a) % 65535;
	}
	return b << 16 | a;
}

void fs_msg_encode(void *buf, const struct fs_msg *m)
{
	struct fs_msg t = *m;
	t.magic = FS_MAGIC;
	t.hdr_len = FS_HDR_LEN;
	t.hsum = hdr_sum(&t);
	memcpy(buf, &t, sizeof(t));
}

long fs_msg_decode(const void *buf, size_t len, struct fs_msg *m, int *why)
{
	*why = 0;
	memset(m, 0, sizeof(*m));
	if (len >= 12) // enough for the reply to name the request
		memcpy(m, buf, 12);
	if (len < FS_HDR_LEN)
		*why = FS_WHY_TRUNCATED;
	else {
		memcpy(m, buf, FS_HDR_LEN);
		if (m->magic != FS_MAGIC || m->hdr_len != FS_HDR_LEN)
			*why = FS_WHY_MAGIC;
		else if (m->hsum != hdr_sum(m))
			*why = FS_WHY_HSUM;
		else if (m->inline_len > len - FS_HDR_LEN)
			*why = FS_WHY_TRUNCATED;
		else if (!(m->flags & FS_F_REPLY) && (m->op == 0 || m->op >= FS_OP_MAX))
			*why = FS_WHY_OP;
	}
	return *why ? -E_INVAL : 0;
}

long fs_cfg_check(const struct fs_cfg *c)
{
	int ok = c->small_max <= FS_INLINE_MAX && c->chunk >= 4096 && c->chunk % 4096 == 0 &&
		  c->chunk <= (16u << 20) && c->streams >= 1 && c->streams <= FS_MAX_STREAMS &&
		  c->batch >= 1 && c->batch <= 128 && c->window >= 1 && c->window <= 8;
	return ok ? 0 : -E_INVAL;
}

long fs_range_check(uint64_t off, uint64_t len, uint64_t size)
{
	if (off > FS_MAX_FILE || len > FS_MAX_FILE - off)
		return -E_2BIG;
	return off > size ? -E_RANGE : 0;
}

uint32_t fs_nchunks(uint64_t off, uint64_t len, uint32_t chunk)
{
	if (!len)
		return 0;
	return (uint32_t)((off + len - 1) / chunk - off / chunk + 1);
}

void fs_chunk(uint64_t off, uint64_t len, uint32_t chunk, uint32_t i, uint64_t *coff, uint64_t *clen)
{
	uint64_t start = i ? (off / chunk + i) * chunk : off;
	uint64_t end = (off / chunk + i + 1) * chunk;
	if (end > off + len)
		end = off + len;
	*coff = start, *clen = end - start;
}

uint32_t fs_chunk_pkts(uint64_t clen, uint32_t batch, uint32_t *padded)
{
	uint32_t n = (uint32_t)((clen + FS_DATA_PKT - 1) / FS_DATA_PKT);
	*padded = (n + batch - 1) / batch * batch;
	return n;
}

struct fs_mark {
	uint32_t magic, rid, k, zero;
	uint64_t clen, sum;
};
_Static_assert(sizeof(struct fs_mark) == FS_MARK_LEN, "a mark is FS_MARK_LEN bytes");

void fs_mark_put(void *p, uint32_t rid, uint32_t k, uint64_t clen)
{
	struct fs_mark m = { .magic = FS_MARK_MAGIC, .rid = rid, .k = k, .clen = clen };
	m.sum = fs_sum(&m, offsetof(struct fs_mark, sum));
	memcpy(p, &m, sizeof(m));
}

int fs_mark_is(const void *p, uint32_t rid, uint32_t k, uint64_t clen)
{
	uint8_t want[FS_MARK_LEN];
	fs_mark_put(want, rid, k, clen);
	return !memcmp(p, want, FS_MARK_LEN);
}

long fs_name_get(const void *p, size_t n, char out[FS_NAME_MAX])
{
	const char *s = p;
	if (n && s[n - 1] == 0)
		n--;
	if (n == 0 || n >= FS_NAME_MAX || strnlen(s, n) != n)
		return -E_INVAL;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}
