// relaybench: end-to-end measurements through Linux IP routers (the Linux
// side of the relay benchmark, bench-relay.sh).  AF_PACKET frames cannot be
// routed, so everything here is IP:
//   tcp   one TCP connection per measurement: a 16-byte header (magic, write
//         size, total bytes), then the total in write()s of the given size;
//         stream byte `off` is wire_pattern(off >> 13, off & 8191), as in
//         pktbench's stream mode; the server checks every byte and answers
//         with the bytes verified and the time from the first to the last
//         byte; Mbit/s = total * 8 / that time.
//   raw   a UDP burst: 128 datagrams of SIZE payload bytes sent back to back,
//         the server answers once it has them all (or 200 ms after the last
//         one arrived) with the number received intact; T0 from the first
//         send to the answer; Mbit/s = received * SIZE * 8 / T0.
//   rtt   a UDP ping-pong of SIZE payload bytes, verified at both ends.
// Roles: `server` (the far end), `client` (measures), `router` (an agent on
// each router: on a client's MARK datagram it reads its own counters (TSC,
// CLOCK_MONOTONIC, idle time from /proc/timer_list and /proc/stat, IP
// forwarded datagrams from /proc/net/snmp), prints them and answers, so that
// bench-relay.sh can take the router's busy time (under -icount shift=0:
// instructions) per forwarded packet over each measurement).
//
// Datagram header (16 bytes, big-endian): magic, type (16 bits), aux (16
// bits), seq, len; then `len` payload bytes, byte i = wire_pattern(seq, i)
// (burst packet idx of burst b: seq = b * 128 + idx).
//
// Output lines (stdout):
//   RESULT tcp bytes=.. rep=.. total=.. verified=.. us=.. mbps=.. client_us=.. retrans=..
//   RESULT raw bytes=.. rep=.. t0_us=.. good=.. sent=128 mbps=..
//   RESULT rtt bytes=.. iter=.. us=..
//   RMARK tag=.. mono_ns=.. tsc=.. idle_ns=.. stat_idle=.. stat_total=.. fwd=.. inrecv=..
//   SRVSTAT corrupt_datagrams=.. malformed_datagrams=.. (server), RSTAT malformed_datagrams=.. (router):
//   datagrams whose payload failed the pattern, or that were not ours (ignored, counted)
//   DONE ok | DONE fail <reason>
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/include/wire.h"
#include "benchnet.h"

#define RB_MAGIC 0x524c5942u // "RLYB"
#define RB_UDP_PORT 7020
#define RB_TCP_PORT 7021
#define RB_HLEN 16u
#define RB_MAX_PAYLOAD 8956u // 9000 MTU - IPv4 - UDP - our header
#define RB_BURST 128u
#define RB_MAX_SIZES 8
#define RB_MAX_ROUTERS 4
#define RB_BUF 65536u

enum rb_type { T_RTT = 1, T_BURST = 2, T_BURST_ACK = 3, T_QUIT = 4, T_MARK = 5, T_MARK_ACK = 6 };
enum rb_role { ROLE_SERVER, ROLE_CLIENT, ROLE_ROUTER };

struct opts {
	enum rb_role role;
	char modes[64];
	uint32_t sizes[RB_MAX_SIZES];
	int nsizes;
	int runs, warmup, rtts, bursts;
	uint64_t tcp_bytes;
	struct in_addr server;
	struct in_addr routers[RB_MAX_ROUTERS];
	int nrouters;
	int probe_ms; // how long the client waits for each peer to answer
	int idle_ms;  // server, router: longest silence before giving up
};

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

// ---------------------------------------------------------------- datagrams

struct dgram {
	uint16_t type, aux;
	uint32_t seq, len;
	const uint8_t *payload;
};

// Writes header and pattern payload into buf; returns the datagram length.
static size_t dg_build(uint8_t *buf, uint16_t type, uint16_t aux, uint32_t seq, uint32_t len)
{
	put_be32(buf, RB_MAGIC);
	buf[4] = (uint8_t)(type >> 8), buf[5] = (uint8_t)type;
	buf[6] = (uint8_t)(aux >> 8), buf[7] = (uint8_t)aux;
	put_be32(buf + 8, seq);
	put_be32(buf + 12, len);
	if (type != T_MARK)
		for (uint32_t i = 0; i < len; i++)
			buf[RB_HLEN + i] = wire_pattern(seq, i);
	return RB_HLEN + len;
}

// 0 if buf holds a well-formed datagram (payload checked only when `check`).
static int dg_parse(const uint8_t *buf, ssize_t n, struct dgram *d, bool check)
{
	if (n < (ssize_t)RB_HLEN || get_be32(buf) != RB_MAGIC)
		return -1;
	d->type = (uint16_t)(buf[4] << 8 | buf[5]);
	d->aux = (uint16_t)(buf[6] << 8 | buf[7]);
	d->seq = get_be32(buf + 8);
	d->len = get_be32(buf + 12);
	d->payload = buf + RB_HLEN;
	if ((ssize_t)(RB_HLEN + d->len) != n)
		return -1;
	if (check)
		for (uint32_t i = 0; i < d->len; i++)
			if (d->payload[i] != wire_pattern(d->seq, i))
				return -1;
	return 0;
}

static int udp_socket(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	int big = 16 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0) // not root: what rmem_max allows
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind udp %u: %s", port, strerror(errno));
	return fd;
}

// recvfrom with a timeout in ms; returns the length, or -1 on timeout.
static ssize_t recv_wait(int fd, uint8_t *buf, struct sockaddr_in *from, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) <= 0)
		return -1;
	socklen_t fl = sizeof *from;
	return recvfrom(fd, buf, RB_BUF, 0, (struct sockaddr *)from, &fl);
}

static void send_to(int fd, const uint8_t *buf, size_t n, struct in_addr ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(RB_UDP_PORT), .sin_addr = ip };
	if (sendto(fd, buf, n, 0, (struct sockaddr *)&a, sizeof a) < 0 && errno != ENOBUFS)
		die("sendto %s: %s", inet_ntoa(ip), strerror(errno));
}

// Sends one datagram to ip and waits for an answer of type `want` with the
// same seq, resending every 200 ms for up to ms; 0 when answered.
static int request(int fd, uint8_t *buf, size_t n, struct in_addr ip, uint16_t want, uint32_t seq, int ms)
{
	uint8_t rx[RB_BUF];
	uint64_t deadline = now_ns() + (uint64_t)ms * 1000000u;
	while (now_ns() < deadline) {
		send_to(fd, buf, n, ip);
		uint64_t retry = now_ns() + 200000000u;
		for (;;) {
			int left = (int)(((int64_t)retry - (int64_t)now_ns()) / 1000000);
			if (left <= 0)
				break;
			struct sockaddr_in from;
			struct dgram d;
			ssize_t r = recv_wait(fd, rx, &from, left);
			if (r >= 0 && dg_parse(rx, r, &d, false) == 0 && d.type == want && d.seq == seq)
				return 0;
		}
	}
	return -1;
}

// ---------------------------------------------------------------- counters

// The value of field `name` in the `prefix` section of /proc/net/snmp, or -1.
static long long snmp_get(const char *prefix, const char *name)
{
	FILE *f = fopen("/proc/net/snmp", "r");
	char head[2048], vals[2048];
	long long v = -1;
	if (!f)
		return -1;
	while (fgets(head, sizeof head, f) && fgets(vals, sizeof vals, f)) {
		if (strncmp(head, prefix, strlen(prefix)) != 0)
			continue;
		char *sh, *sv;
		char *h = strtok_r(head, " \n", &sh), *x = strtok_r(vals, " \n", &sv);
		while ((h = strtok_r(NULL, " \n", &sh)) && (x = strtok_r(NULL, " \n", &sv)))
			if (strcmp(h, name) == 0) {
				v = atoll(x);
				break;
			}
		break;
	}
	fclose(f);
	return v;
}

// cpu0's idle time in ns from /proc/timer_list (".idle_sleeptime", kept by
// the nohz code exactly: it stops on every interrupt entry), or -1.
static long long timer_list_idle_ns(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[512];
	long long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char *p = strstr(line, ".idle_sleeptime");
		if (p && (p = strchr(p, ':'))) {
			v = atoll(p + 1);
			break;
		}
	}
	fclose(f);
	return v;
}

// /proc/stat's first line: idle (idle + iowait) and total, in USER_HZ ticks.
static void stat_cpu(long long *idle, long long *total)
{
	FILE *f = fopen("/proc/stat", "r");
	long long v[10] = { 0 };
	*idle = *total = -1;
	if (!f)
		return;
	if (fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4],
	           &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
		*idle = v[3] + v[4];
		*total = 0;
		for (int i = 0; i < 8; i++)
			*total += v[i];
	}
	fclose(f);
}

// The counters are read in this order so that the time stamps come last:
// the window between a begin and an end mark holds as little of the marks'
// own work as possible (the rest is measured by the client's idle windows).
static void print_mark(const char *tag)
{
	long long fwd = snmp_get("Ip:", "ForwDatagrams"), inrecv = snmp_get("Ip:", "InReceives");
	long long ind = snmp_get("Ip:", "InDiscards"), outd = snmp_get("Ip:", "OutDiscards"), si, st;
	stat_cpu(&si, &st);
	uint64_t tsc = rdtsc(), mono = now_ns();
	long long idle = timer_list_idle_ns();
	printf("RMARK tag=%s mono_ns=%llu tsc=%llu idle_ns=%lld stat_idle=%lld stat_total=%lld fwd=%lld inrecv=%lld "
	       "indiscards=%lld outdiscards=%lld\n",
	       tag, (unsigned long long)mono, (unsigned long long)tsc, idle, si, st, fwd, inrecv, ind, outd);
	fflush(stdout);
}

// ---------------------------------------------------------------- router

// Answers MARK datagrams (after printing its counters) until a QUIT or
// idle_ms of silence.
static int run_router(const struct opts *o)
{
	int fd = udp_socket(RB_UDP_PORT);
	uint8_t *buf = malloc(RB_BUF), tx[RB_HLEN];
	unsigned long long malformed = 0;
	if (!buf)
		die("out of memory");
	printf("READY role=router\n");
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from;
		struct dgram d;
		ssize_t n = recv_wait(fd, buf, &from, o->idle_ms);
		if (n < 0)
			die("router: nothing for %d ms", o->idle_ms);
		if (dg_parse(buf, n, &d, false) < 0 || (d.type != T_MARK && d.type != T_QUIT)) {
			malformed++;
			continue;
		}
		if (d.type == T_MARK) {
			char tag[64];
			uint32_t l = d.len < sizeof tag - 1 ? d.len : sizeof tag - 1;
			memcpy(tag, d.payload, l);
			tag[l] = 0;
			for (char *c = tag; *c; c++)
				if (*c == ' ' || *c == '=' || *c < 32 || *c > 126)
					*c = '_';
			print_mark(tag);
		}
		dg_build(tx, d.type == T_MARK ? T_MARK_ACK : T_QUIT, 0, d.seq, 0);
		sendto(fd, tx, RB_HLEN, 0, (struct sockaddr *)&from, sizeof from);
		if (d.type == T_QUIT)
			break;
	}
	free(buf);
	printf("RSTAT malformed_datagrams=%llu\n", malformed);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- server

struct burst_state {
	uint32_t id, good, bad;
	bool open;
	struct sockaddr_in from;
};

static void burst_answer(int fd, struct burst_state *b)
{
	uint8_t tx[RB_HLEN];
	dg_build(tx, T_BURST_ACK, (uint16_t)b->good, b->id, 0);
	sendto(fd, tx, RB_HLEN, 0, (struct sockaddr *)&b->from, sizeof b->from);
	if (b->good != RB_BURST || b->bad)
		printf("SRVSTAT raw burst=%u good=%u bad=%u\n", b->id, b->good, b->bad);
	b->open = false;
}

// One datagram of the UDP side; returns 1 on QUIT.
static int serve_dgram(int fd, uint8_t *buf, ssize_t n, struct sockaddr_in *from, struct burst_state *b,
                       unsigned long long *corrupt, unsigned long long *malformed)
{
	struct dgram d;
	if (dg_parse(buf, n, &d, false) < 0) {
		(*malformed)++;
		return 0;
	}
	bool intact = dg_parse(buf, n, &d, true) == 0;
	if (d.type == T_RTT || d.type == T_QUIT) {
		if (!intact) {
			(*corrupt)++;
			return 0;
		}
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)from, sizeof *from);
		return d.type == T_QUIT;
	}
	if (d.type != T_BURST)
		return 0;
	uint32_t id = d.seq / RB_BURST;
	if (!b->open || id != b->id) {
		if (b->open)
			burst_answer(fd, b);
		*b = (struct burst_state){ .id = id, .open = true, .from = *from };
	}
	intact ? b->good++ : (b->bad++, (*corrupt)++);
	if (b->good + b->bad == RB_BURST)
		burst_answer(fd, b);
	return 0;
}

static uint8_t stream_byte(uint64_t off)
{
	return wire_pattern((uint32_t)(off >> 13), (uint32_t)(off & 8191));
}

// One TCP connection: header, bytes checked against the pattern, answer
// (magic, status 0 ok / 1 short, bytes verified, ns first to last byte).
static void serve_tcp(int c, uint8_t *buf)
{
	uint8_t hdr[16], ans[24];
	set_timeouts(c, 5000);
	if (read_full(c, hdr, sizeof hdr) || get_be32(hdr) != RB_MAGIC)
		return;
	uint64_t total = get_be64(hdr + 8), got = 0, good = 0, t0 = 0, t1 = 0;
	while (got < total) {
		ssize_t r = read(c, buf, total - got < RB_BUF ? total - got : RB_BUF);
		if (r <= 0)
			break;
		t1 = now_ns();
		if (!got)
			t0 = t1;
		for (ssize_t i = 0; i < r; i++)
			good += buf[i] == stream_byte(got + (uint64_t)i);
		got += (uint64_t)r;
	}
	put_be32(ans, RB_MAGIC);
	put_be32(ans + 4, got == total ? 0 : 1);
	put_be64(ans + 8, good);
	put_be64(ans + 16, t1 - t0);
	write_full(c, ans, sizeof ans);
	if (good != total)
		printf("SRVSTAT tcp total=%llu received=%llu verified=%llu\n", (unsigned long long)total,
		       (unsigned long long)got, (unsigned long long)good);
}

static int tcp_listen(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (l < 0)
		die("socket: %s", strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(RB_TCP_PORT) };
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0)
		die("listen tcp %d: %s", RB_TCP_PORT, strerror(errno));
	return l;
}

static int run_server(const struct opts *o)
{
	int u = udp_socket(RB_UDP_PORT), l = tcp_listen();
	uint8_t *buf = malloc(RB_BUF);
	struct burst_state b = { 0 };
	unsigned long long corrupt = 0, malformed = 0;
	uint64_t last = now_ns();
	if (!buf)
		die("out of memory");
	printf("READY role=server udp=%d tcp=%d\n", RB_UDP_PORT, RB_TCP_PORT);
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = { { .fd = u, .events = POLLIN }, { .fd = l, .events = POLLIN } };
		int r = poll(p, 2, b.open ? 200 : 1000);
		if (r == 0) {
			if (b.open) // some of the burst never came: answer with what did
				burst_answer(u, &b);
			if (now_ns() - last > (uint64_t)o->idle_ms * 1000000u)
				die("server: nothing for %d ms", o->idle_ms);
			continue;
		}
		last = now_ns();
		if (p[1].revents & POLLIN) {
			int c = accept(l, NULL, NULL);
			if (c >= 0) {
				serve_tcp(c, buf);
				close(c);
			}
		}
		if (p[0].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t n = recvfrom(u, buf, RB_BUF, 0, (struct sockaddr *)&from, &fl);
			if (n > 0 && serve_dgram(u, buf, n, &from, &b, &corrupt, &malformed))
				break;
		}
	}
	free(buf);
	printf("SRVSTAT corrupt_datagrams=%llu malformed_datagrams=%llu\n", corrupt, malformed);
	if (corrupt)
		die("server: %llu corrupt datagrams", corrupt);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- client

// Tells every router to print its counters (tag "begin-tcp-8192" ...).
static void mark_routers(const struct opts *o, int fd, const char *what, const char *mode, uint32_t size)
{
	static uint32_t seq = 1;
	uint8_t buf[RB_HLEN + 64];
	for (int i = 0; i < o->nrouters; i++) {
		int l = snprintf((char *)buf + RB_HLEN, 64, "%s-%s-%u", what, mode, size);
		size_t n = dg_build(buf, T_MARK, 0, seq, (uint32_t)l);
		if (request(fd, buf, n, o->routers[i], T_MARK_ACK, seq, 5000))
			die("router %s: no answer to mark %s", inet_ntoa(o->routers[i]), buf + RB_HLEN);
		seq++;
	}
}

static long long tcp_retrans(void)
{
	return snmp_get("Tcp:", "RetransSegs");
}

static int tcp_connect(const struct opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(RB_TCP_PORT), .sin_addr = o->server };
	uint64_t deadline = now_ns() + (uint64_t)o->probe_ms * 1000000u;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		set_timeouts(fd, 10000);
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (now_ns() > deadline)
			die("connect %s: %s", inet_ntoa(o->server), strerror(e));
		usleep(200000);
	}
}

static void tcp_once(const struct opts *o, uint8_t *buf, uint32_t size, int rep)
{
	uint8_t hdr[16], ans[24];
	int fd = tcp_connect(o);
	long long re0 = tcp_retrans();
	uint64_t t0 = now_ns(), total = o->tcp_bytes;
	put_be32(hdr, RB_MAGIC);
	put_be32(hdr + 4, size);
	put_be64(hdr + 8, total);
	if (write_full(fd, hdr, sizeof hdr))
		die("tcp: header: %s", strerror(errno));
	for (uint64_t off = 0; off < total;) {
		uint32_t n = total - off < size ? (uint32_t)(total - off) : size;
		for (uint32_t i = 0; i < n; i++)
			buf[i] = stream_byte(off + i);
		if (write_full(fd, buf, n))
			die("tcp bytes=%u: write at %llu: %s", size, (unsigned long long)off, strerror(errno));
		off += n;
	}
	if (read_full(fd, ans, sizeof ans) || get_be32(ans) != RB_MAGIC)
		die("tcp bytes=%u: no answer from the server", size);
	double client_us = (double)(now_ns() - t0) / 1000.0;
	close(fd);
	uint64_t good = get_be64(ans + 8), ns = get_be64(ans + 16);
	if (get_be32(ans + 4) != 0 || good != total)
		die("tcp bytes=%u: server verified %llu of %llu bytes", size, (unsigned long long)good,
		    (unsigned long long)total);
	if (rep >= 0)
		printf("RESULT tcp bytes=%u rep=%d total=%llu verified=%llu us=%.1f mbps=%.3f client_us=%.1f "
		       "retrans=%lld\n",
		       size, rep, (unsigned long long)total, (unsigned long long)good, (double)ns / 1000.0,
		       ns ? (double)total * 8000.0 / (double)ns : 0.0, client_us, tcp_retrans() - re0);
}

// One burst: 128 datagrams, then the server's count; returns packets lost.
static uint32_t burst_once(const struct opts *o, int fd, uint8_t *buf, uint32_t size, uint32_t id, int rep)
{
	uint8_t rx[RB_BUF];
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < RB_BURST; i++) {
		size_t n = dg_build(buf, T_BURST, (uint16_t)i, id * RB_BURST + i, size);
		send_to(fd, buf, n, o->server);
	}
	uint64_t deadline = t0 + 2000000000u;
	for (;;) {
		int left = (int)(((int64_t)deadline - (int64_t)now_ns()) / 1000000);
		struct sockaddr_in from;
		struct dgram d;
		ssize_t r = left > 0 ? recv_wait(fd, rx, &from, left) : -1;
		if (r < 0) {
			if (rep >= 0)
				printf("RESULT raw bytes=%u rep=%d t0_us=0 good=0 sent=%u mbps=0\n", size, rep, RB_BURST);
			return RB_BURST;
		}
		if (dg_parse(rx, r, &d, false) || d.type != T_BURST_ACK || d.seq != id)
			continue;
		double us = (double)(now_ns() - t0) / 1000.0;
		if (rep >= 0)
			printf("RESULT raw bytes=%u rep=%d t0_us=%.1f good=%u sent=%u mbps=%.3f\n", size, rep, us, d.aux,
			       RB_BURST, (double)d.aux * size * 8.0 / us);
		return RB_BURST - d.aux;
	}
}

// One round trip; returns its time in us, or -1 when no echo came in 1 s.
static double rtt_once(const struct opts *o, int fd, uint8_t *buf, uint32_t size, uint32_t seq)
{
	uint8_t rx[RB_BUF];
	size_t n = dg_build(buf, T_RTT, 0, seq, size);
	uint64_t t0 = now_ns();
	send_to(fd, buf, n, o->server);
	for (;;) {
		int left = 1000 - (int)((now_ns() - t0) / 1000000);
		struct sockaddr_in from;
		struct dgram d;
		ssize_t r = left > 0 ? recv_wait(fd, rx, &from, left) : -1;
		if (r < 0)
			return -1;
		uint64_t t1 = now_ns();
		if (dg_parse(rx, r, &d, false) || d.type != T_RTT || d.seq != seq)
			continue;
		if (d.len != size || dg_parse(rx, r, &d, true))
			die("rtt bytes=%u: echo corrupt", size);
		return (double)(t1 - t0) / 1000.0;
	}
}

static void client_mode(const struct opts *o, int u, uint8_t *buf, const char *mode, uint32_t size)
{
	static uint32_t seq = 1, burst_id = 1;
	mark_routers(o, u, "begin", mode, size);
	if (strcmp(mode, "tcp") == 0) {
		for (int rep = -o->warmup; rep < o->runs; rep++)
			tcp_once(o, buf, size, rep);
	} else if (strcmp(mode, "raw") == 0) {
		uint32_t lost = 0;
		for (int rep = -o->warmup; rep < o->bursts; rep++) {
			uint32_t l = burst_once(o, u, buf, size, burst_id++, rep);
			lost += rep >= 0 ? l : 0;
			usleep(2000);
		}
		printf("LOSS raw bytes=%u lost=%u of=%u\n", size, lost, (uint32_t)o->bursts * RB_BURST);
	} else if (strcmp(mode, "rtt") == 0) {
		int lost = 0;
		for (int it = -o->warmup; it < o->rtts; it++) {
			double us = rtt_once(o, u, buf, size, seq++);
			if (us < 0)
				lost++;
			else if (it >= 0)
				printf("RESULT rtt bytes=%u iter=%d us=%.1f\n", size, it, us);
		}
		if (lost > o->rtts / 10)
			die("rtt bytes=%u: %d of %d round trips lost", size, lost, o->rtts + o->warmup);
	} else {
		die("mode %s: tcp, raw or rtt", mode);
	}
	mark_routers(o, u, "end", mode, size);
	fflush(stdout);
}

static int run_client(const struct opts *o)
{
	int u = udp_socket(0);
	uint8_t *buf = malloc(RB_BUF);
	if (!buf)
		die("out of memory");
	// Every router, then the server through them, answers before anything
	// is measured (this also resolves every ARP entry on the path).
	uint8_t probe[RB_HLEN];
	for (int i = 0; i < o->nrouters; i++) {
		size_t n = dg_build(probe, T_MARK, 0, 0, 0);
		if (request(u, probe, n, o->routers[i], T_MARK_ACK, 0, o->probe_ms))
			die("router %s does not answer", inet_ntoa(o->routers[i]));
	}
	size_t n = dg_build(probe, T_RTT, 0, 0x80000000u, 0);
	if (request(u, probe, n, o->server, T_RTT, 0x80000000u, o->probe_ms))
		die("server %s does not answer", inet_ntoa(o->server));
	printf("READY role=client server=%s routers=%d\n", inet_ntoa(o->server), o->nrouters);
	// Windows with no traffic: what a begin and an end mark cost a router
	// by themselves (bench-relay.py subtracts it from every window).
	for (int i = 0; i < 3; i++) {
		mark_routers(o, u, "begin", "idle", 0);
		mark_routers(o, u, "end", "idle", 0);
	}
	char modes[64], *save;
	snprintf(modes, sizeof modes, "%s", o->modes);
	for (char *m = strtok_r(modes, ",", &save); m; m = strtok_r(NULL, ",", &save))
		for (int i = 0; i < o->nsizes; i++)
			client_mode(o, u, buf, m, o->sizes[i]);
	n = dg_build(probe, T_QUIT, 0, 0xfffffff0u, 0);
	if (request(u, probe, n, o->server, T_QUIT, 0xfffffff0u, 3000))
		die("server did not answer the quit");
	for (int i = 0; i < o->nrouters; i++) {
		n = dg_build(probe, T_QUIT, 0, 0xfffffff1u, 0);
		if (request(u, probe, n, o->routers[i], T_QUIT, 0xfffffff1u, 3000))
			die("router %s did not answer the quit", inet_ntoa(o->routers[i]));
	}
	free(buf);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- options

static void usage(void)
{
	fprintf(stderr, "usage: relaybench --role server|router [--idle-ms MS]\n"
	                "       relaybench --role client --server IP [--router IP]... [--modes tcp,raw,rtt]\n"
	                "                  [--sizes 1500,8192] [--runs N] [--bursts N] [--rtts N] [--warmup N]\n"
	                "                  [--tcp-bytes N] [--probe-ms MS]\n"
	                "       relaybench --selfcheck\n");
	exit(2);
}

static int parse_sizes(const char *s, struct opts *o)
{
	char tmp[128], *save;
	snprintf(tmp, sizeof tmp, "%s", s);
	o->nsizes = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long v = strtol(t, NULL, 10);
		if (v < 1 || v > (long)RB_MAX_PAYLOAD || o->nsizes == RB_MAX_SIZES)
			return -1;
		o->sizes[o->nsizes++] = (uint32_t)v;
	}
	return o->nsizes ? 0 : -1;
}

// Host-side check of the datagram format (build.sh-style self-check).
static int selfcheck(void)
{
	uint8_t buf[RB_HLEN + 64];
	struct dgram d;
	size_t n = dg_build(buf, T_BURST, 5, 1234, 64);
	if (dg_parse(buf, (ssize_t)n, &d, true) || d.type != T_BURST || d.aux != 5 || d.seq != 1234 || d.len != 64)
		return 1;
	buf[RB_HLEN + 10] ^= 1;
	if (dg_parse(buf, (ssize_t)n, &d, true) == 0 || dg_parse(buf, (ssize_t)n - 1, &d, false) == 0)
		return 1;
	printf("relaybench selfcheck ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .role = ROLE_CLIENT, .runs = 3, .warmup = 1, .rtts = 50, .bursts = 20,
		          .tcp_bytes = 8u << 20, .probe_ms = 60000, .idle_ms = 300000 };
	snprintf(o.modes, sizeof o.modes, "tcp,raw,rtt");
	o.sizes[0] = 1500, o.sizes[1] = 8192, o.nsizes = 2;
	if (argc == 2 && strcmp(argv[1], "--selfcheck") == 0)
		return selfcheck();
	static const struct option lo[] = {
		{ "role", 1, 0, 'r' },   { "server", 1, 0, 'S' }, { "router", 1, 0, 'R' },    { "modes", 1, 0, 'm' },
		{ "sizes", 1, 0, 's' },  { "runs", 1, 0, 'n' },   { "bursts", 1, 0, 'b' },    { "rtts", 1, 0, 't' },
		{ "warmup", 1, 0, 'w' }, { "tcp-bytes", 1, 0, 'B' }, { "probe-ms", 1, 0, 'P' }, { "idle-ms", 1, 0, 'I' },
		{ 0, 0, 0, 0 }
	};
	bool have_server = false;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (strcmp(optarg, "server") == 0)
				o.role = ROLE_SERVER;
			else if (strcmp(optarg, "router") == 0)
				o.role = ROLE_ROUTER;
			else if (strcmp(optarg, "client") == 0)
				o.role = ROLE_CLIENT;
			else
				usage();
			break;
		case 'S': if (!inet_aton(optarg, &o.server)) usage(); have_server = true; break;
		case 'R':
			if (o.nrouters == RB_MAX_ROUTERS || !inet_aton(optarg, &o.routers[o.nrouters++]))
				usage();
			break;
		case 'm': snprintf(o.modes, sizeof o.modes, "%s", optarg); break;
		case 's': if (parse_sizes(optarg, &o)) usage(); break;
		case 'n': o.runs = atoi(optarg); break;
		case 'b': o.bursts = atoi(optarg); break;
		case 't': o.rtts = atoi(optarg); break;
		case 'w': o.warmup = atoi(optarg); break;
		case 'B': o.tcp_bytes = strtoull(optarg, NULL, 10); if (!o.tcp_bytes) usage(); break;
		case 'P': o.probe_ms = atoi(optarg); break;
		case 'I': o.idle_ms = atoi(optarg); break;
		default: usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.role == ROLE_SERVER)
		return run_server(&o);
	if (o.role == ROLE_ROUTER)
		return run_router(&o);
	if (!have_server)
		usage();
	return run_client(&o);
}
