// The file service's on-disk layout: encode, check, recover, allocate (fsdisk.h).
#include "fsdisk.h"
#include "err.h"
#include <string.h>

static const char SUPER_MAGIC[8] = "TNDRFS01";
static const char TABLE_MAGIC[8] = "TNDRFSTB";

void fs_super_init(struct fs_super *s, uint64_t disk_bytes)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->magic, SUPER_MAGIC, 8);
	s->version = FS_VERSION, s->block = FS_BLOCK;
	s->disk_bytes = disk_bytes & ~(FS_BLOCK - 1);
	s->table_off[0] = FS_TABLE_OFF(0), s->table_off[1] = FS_TABLE_OFF(1);
	s->table_bytes = FS_TABLE_BYTES, s->data_off = FS_DATA_OFF;
	s->max_files = FS_MAX_FILES;
	s->sum = fs_sum(s, offsetof(struct fs_super, sum));
}

long fs_super_check(const struct fs_super *s)
{
	if (memcmp(s->magic, SUPER_MAGIC, 8))
		return -E_INVAL;
	if (s->sum != fs_sum(s, offsetof(struct fs_super, sum)) || s->version != FS_VERSION || s->block != FS_BLOCK ||
	    s->table_off[0] != FS_TABLE_OFF(0) || s->table_off[1] != FS_TABLE_OFF(1) ||
	    s->table_bytes != FS_TABLE_BYTES || s->data_off != FS_DATA_OFF || s->max_files != FS_MAX_FILES ||
	    s->disk_bytes < FS_DATA_OFF || s->disk_bytes % FS_BLOCK)
		return -E_IO;
	return 0;
}

void fs_table_init(struct fs_table *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->magic, TABLE_MAGIC, 8);
	t->next_uid = 1;
	fs_table_seal(t);
}

// (The copy is static: a table is larger than a user stack's share.)
static uint64_t table_sum(const struct fs_table *t)
{
	static struct fs_table c;
	c = *t;
	c.sum = 0;
	return fs_sum(&c, sizeof(c));
}

void fs_table_seal(struct fs_table *t)
{
	uint32_t n = 0;
	for (int i = 0; i < FS_MAX_FILES; i++)
		n += (t->e[i].flags & FS_E_USED) != 0;
	t->nfiles = n;
	t->sum = table_sum(t);
}

static int entry_sane(const struct fs_entry *e, const struct fs_super *s)
{
	size_t n = strnlen(e->name, FS_NAME_MAX);
	if (n == 0 || n == FS_NAME_MAX || e->flags != FS_E_USED || e->uid == 0)
		return 0;
	if (e->size > e->ext_cap || e->ext_cap > FS_MAX_FILE || e->ext_cap % FS_BLOCK)
		return 0;
	if (e->ext_cap == 0)
		return e->ext_off == 0;
	return e->ext_off % FS_BLOCK == 0 && e->ext_off >= s->data_off && e->ext_off <= s->disk_bytes &&
	       e->ext_cap <= s->disk_bytes - e->ext_off;
}

static int overlap(const struct fs_entry *a, const struct fs_entry *b)
{
	return a->ext_cap && b->ext_cap && a->ext_off < b->ext_off + b->ext_cap && b->ext_off < a->ext_off + a->ext_cap;
}

long fs_table_check(const struct fs_table *t, const struct fs_super *s)
{
	if (memcmp(t->magic, TABLE_MAGIC, 8) || t->sum != table_sum(t))
		return -E_IO;
	uint32_t used = 0;
	for (int i = 0; i < FS_MAX_FILES; i++) {
		const struct fs_entry *e = &t->e[i];
		if (!e->flags)
			continue;
		if (!entry_sane(e, s) || e->uid >= t->next_uid)
			return -E_IO;
		used++;
		for (int j = 0; j < i; j++)
			if (t->e[j].flags &&
			    (overlap(e, &t->e[j]) || e->uid == t->e[j].uid || !strcmp(e->name, t->e[j].name)))
				return -E_IO;
	}
	return used == t->nfiles ? 0 : -E_IO;
}

long fs_table_pick(const struct fs_table *t0, const struct fs_table *t1, const struct fs_super *s)
{
	int ok0 = fs_table_check(t0, s) == 0, ok1 = fs_table_check(t1, s) == 0;
	if (ok0 && ok1)
		return t1->gen > t0->gen ? 1 : 0;
	return ok0 ? 0 : ok1 ? 1 : -E_IO;
}

struct span {
	uint64_t lo, hi;
};

// Shell sort by lo (no libc here; Ciura's gaps, then 2.25 times on).
static void spans_sort(struct span *s, int n)
{
	static const int gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
	for (int g = 0; g < 8; g++)
		for (int i = gaps[g]; i < n; i++) {
			struct span v = s[i];
			int j = i;
			for (; j >= gaps[g] && s[j - gaps[g]].lo > v.lo; j -= gaps[g])
				s[j] = s[j - gaps[g]];
			s[j] = v;
		}
}

long fs_extent_alloc(const struct fs_table *const *t, int n, const struct fs_super *s, uint64_t bytes)
{
	static struct span sp[2 * FS_MAX_FILES];
	if (!bytes || bytes % FS_BLOCK || n < 0 || n > 2)
		return -E_INVAL;
	int m = 0;
	for (int k = 0; k < n; k++)
		for (int i = 0; i < FS_MAX_FILES; i++)
			if (t[k]->e[i].flags && t[k]->e[i].ext_cap)
				sp[m++] = (struct span){ t[k]->e[i].ext_off, t[k]->e[i].ext_off + t[k]->e[i].ext_cap };
	spans_sort(sp, m);
	uint64_t off = s->data_off; // below it nothing is free; past each span in the way
	for (int k = 0; k < m && off <= s->disk_bytes && bytes <= s->disk_bytes - off; k++) {
		if (sp[k].lo >= off + bytes)
			break;
		if (sp[k].hi > off)
			off = sp[k].hi;
	}
	return off <= s->disk_bytes && bytes <= s->disk_bytes - off ? (long)off : -E_NOMEM;
}

long fs_table_find(const struct fs_table *t, const char *name)
{
	for (int i = 0; i < FS_MAX_FILES; i++)
		if (t->e[i].flags && !strncmp(t->e[i].name, name, FS_NAME_MAX))
			return i;
	return -E_NOENT;
}
