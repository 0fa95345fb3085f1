// The file service's command-line tool: runs the commands of do= against a
// server (user/fsd.c), one after the other, printing one line each, and
// stops at the first that fails (exit 1).
// do=CMD+CMD+.. where CMD is one of (fields split by ':'; NAME a file name):
//   create:NAME          create (or open) it          open:NAME   its handle and size
//   write:NAME:OFF:LEN:SEED  LEN bytes of test data (fs_pattern of SEED) at OFF
//   read:NAME:OFF:LEN[:SEED] reads, prints the bytes read and their checksum;
//                        with SEED, also compares them with that data
//   stat:NAME            size, mtime (the server's us), version
//   close:NAME  unlink:NAME  fsync[:NAME]  truncate:NAME:LEN  list  stats  bye
// Other arguments: nics=, peer= (the server's MACs), chan=, timeout_ms=,
// buf_mb= (the largest read or write, default 8 MiB),
// the settings of fs.h (as the server's). A file is opened by name on first
// use and its handle kept for the next commands.
#include <ulib.h>
#include <netutil.h>
#include "fs.h"

#define MAXH 16

static struct fs_client fc;
static struct { char name[FS_NAME_MAX]; long h; } hs[MAXH];
static uint8_t *buf;
static uint64_t buf_bytes;

// The command's fields: f[0] the verb; returns how many.
static int split(char *cmd, char **f, int max)
{
	int n = 0;
	f[n++] = cmd;
	for (char *p = cmd; *p && n < max; p++)
		if (*p == ':')
			*p = 0, f[n++] = p + 1;
	return n;
}

static long handle(const char *name, int create)
{
	int free = -1;
	for (int i = 0; i < MAXH; i++) {
		if (hs[i].h > 0 && !strcmp(hs[i].name, name))
			return hs[i].h;
		if (hs[i].h <= 0 && free < 0)
			free = i;
	}
	long h = create ? fs_create(&fc, name, 0) : fs_open(&fc, name, NULL);
	if (h >= 0 && free >= 0) {
		strlcpy(hs[free].name, name, FS_NAME_MAX);
		hs[free].h = h;
	}
	return h;
}

static void forget(const char *name)
{
	for (int i = 0; i < MAXH; i++)
		if (hs[i].h > 0 && !strcmp(hs[i].name, name))
			hs[i].h = 0;
}

static long do_list(void)
{
	static struct fs_dirent d[FS_MAX_FILES];
	long n = fs_list(&fc, d, FS_MAX_FILES);
	for (long i = 0; i < n; i++)
		printf("fsc: %-39s %lu\n", d[i].name, d[i].size);
	return n < 0 ? n : 0;
}

static long do_stats(void)
{
	struct fs_srvstats s;
	long e = fs_srvstats(&fc, &s);
	if (!e)
		printf("fsc: server requests=%lu written=%lu read=%lu copied=%lu pages_lent=%lu commits=%lu "
		       "files=%lu generation=%lu refused: truncated=%lu magic=%lu hsum=%lu op=%lu handle=%lu "
		       "range=%lu overflow=%lu name=%lu sum=%lu chunks=%lu settings=%lu no_space=%lu table_full=%lu "
		       "no_memory=%lu stale=%lu; in memory: %lu files, %lu loads, %lu evictions\n",
		       s.requests, s.bytes_written, s.bytes_read, s.bytes_copied, s.pages_loaned, s.commits, s.nfiles,
		       s.generation, s.bad_truncated, s.bad_magic, s.bad_hsum, s.bad_op, s.bad_handle, s.bad_range,
		       s.bad_overflow, s.bad_name, s.bad_sum, s.bad_chunks, s.bad_settings, s.no_space, s.table_full,
		       s.no_memory, s.stale_packets, s.files_loaded, s.loads, s.evictions);
	return e;
}

static long do_io(char **f, int n, int wr)
{
	uint64_t off = (uint64_t)atol(f[2]), len = (uint64_t)atol(f[3]);
	if (len > buf_bytes)
		return -E_2BIG;
	long h = handle(f[1], wr);
	if (h < 0)
		return h;
	uint64_t t0 = (uint64_t)time();
	if (wr) {
		fs_pattern(buf, off, len, n > 4 ? (uint64_t)atol(f[4]) : 0);
		long e = fs_write(&fc, h, off, buf, len);
		printf("fsc: write %s at %lu: %ld (%lu us)\n", f[1], off, e, (uint64_t)time() - t0);
		return e < 0 ? e : 0;
	}
	long r = fs_read(&fc, h, off, buf, len);
	uint64_t us = (uint64_t)time() - t0;
	if (r < 0)
		return r;
	printf("fsc: read %s at %lu: %ld bytes (%lu us), checksum %016lx", f[1], off, r, us, fs_sum(buf, (uint64_t)r));
	long d = n > 4 ? fs_pattern_diff(buf, off, (uint64_t)r, (uint64_t)atol(f[4])) : -1;
	printf(n > 4 ? (d < 0 ? ", as written\n" : ", DIFFERS at byte %ld\n") : "\n", d);
	return d < 0 ? 0 : -E_IO;
}

static long run(char *cmd)
{
	char *f[6];
	int n = split(cmd, f, 6);
	const char *v = f[0];
	struct fs_stat st;
	long e, h;
	if (!strcmp(v, "list"))
		return do_list();
	if (!strcmp(v, "stats"))
		return do_stats();
	if (!strcmp(v, "bye")) {
		struct fs_msg q = { .op = FS_OP_BYE }, r;
		return fs_call(&fc, &q, NULL, &r, NULL, 0);
	}
	if (!strcmp(v, "fsync") && n == 1)
		return fs_fsync(&fc, 0);
	if (n < 2)
		return -E_INVAL;
	if (!strcmp(v, "unlink")) {
		forget(f[1]);
		return fs_unlink(&fc, f[1]);
	}
	if ((!strcmp(v, "write") || !strcmp(v, "read")) && n >= 4)
		return do_io(f, n, v[0] == 'w');
	if ((h = handle(f[1], !strcmp(v, "create"))) < 0)
		return h;
	if (!strcmp(v, "create") || !strcmp(v, "open")) {
		e = fs_stat(&fc, h, &st);
		printf("fsc: %s: handle %lx, %lu bytes\n", f[1], h, st.size);
		return e;
	}
	if (!strcmp(v, "stat")) {
		if (!(e = fs_stat(&fc, h, &st)))
			printf("fsc: %s: %lu bytes, mtime %lu us, version %lu\n", f[1], st.size, st.mtime_us, st.version);
		return e;
	}
	if (!strcmp(v, "close")) {
		forget(f[1]);
		return fs_close(&fc, h);
	}
	if (!strcmp(v, "fsync"))
		return fs_fsync(&fc, h);
	if (!strcmp(v, "truncate") && n >= 3)
		return fs_truncate(&fc, h, (uint64_t)atol(f[2]));
	return -E_INVAL;
}

int main(int argc, char **argv)
{
	static char cmds[256];
	const char *d = arg_get(argc, argv, "do", NULL);
	if (!d || strlcpy(cmds, d, sizeof(cmds)) >= sizeof(cmds)) {
		printf("fsc: do=CMD+CMD+.. (see user/fsc.c)\n");
		return 1;
	}
	long e = fs_connect_args(&fc, argc, argv, 5000);
	if (e < 0) {
		printf("fsc: connect: %ld (%s)\n", e, err_name(e));
		return 1;
	}
	buf_bytes = (uint64_t)arg_long(argc, argv, "buf_mb", 8) << 20;
	buf = fs_buf_alloc(&fc, buf_bytes);
	int failed = !buf;
	for (char *c = cmds; c && *c && !failed;) {
		char *next = strchr(c, '+');
		if (next)
			*next++ = 0;
		char shown[64];
		strlcpy(shown, c, sizeof(shown));
		e = run(c);
		printf("fsc: %s: %s\n", shown, e < 0 ? err_name(e) : "ok");
		failed = e < 0;
		c = next;
	}
	fs_disconnect(&fc, FS_DISC_DETACH);
	return failed;
}
