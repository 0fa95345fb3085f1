// lbbench: the Linux side of the load-balancing scenario (issue 13; the
// paper's section 4.2, Table 2): three sending processes over TCP through a
// bond of two paced NICs to one receiver that verifies every byte.
//
//   lbbench --role sender --server-ip IP --nics eth0,eth1 [options]
//   lbbench --role receiver [options]
//   lbbench --selfcheck
//
// Processes (F = --scale, volumes divided by F, timing unchanged):
//   A  1,000,000/F writes of 1 KiB, starts at 0 s, nice 0 (priority 120)
//   B  50 x (10,000/F writes of 1 KiB, then sleep 1 s), starts at 4 s, nice 0
//   C  200,000/F writes of 1 KiB, starts at 8 s, nice -10 (priority 110)
// Each process is a forked child with its own TCP connection (so a bond in
// balance-tlb with xmit_hash_policy layer3+4 sees three flows, as the
// paper's three receivers gave three), from source port
// --sport + 4 * process (distinct tlb hash entries, see bench-lb.sh).
// A and B are told to stop at --ab-stop-s (40: the window of the paper's
// Figure 3) unless done before; C always completes (bounded by --max-s).
// A stopped process shuts its side down and collects the receiver's count.
//
// Stream byte `off` of process p is lb_byte(p, off): 1 KiB pieces of
// wire_pattern, keyed by the piece number and p, so that a byte at the
// wrong offset or from another process is caught.  Pieces come from a
// 256-entry table (the pattern's key takes 256 values), so neither side
// spends CPU generating them.
//
// Wire: each connection starts with a 32-byte header (magic, process
// 0..2 or LB_PROBE, bytes planned, the sender's time since t0 in us when
// it was written); at EOF the receiver answers with 24 bytes (magic,
// verified, corrupt).  A probe connection (before t0) is answered at once.
// With --warm-s S, before t0 each process's source port carries one
// warm-up connection (process | LB_WARM): 64 KiB, answered once all have
// arrived and then reset by the sender (SO_LINGER 0: no TIME_WAIT on
// either side, so the real connection can reuse the port), and the sender
// waits S s.  A bond in balance-tlb then holds an equal load history for
// the three flows' entries, as after earlier runs (see bench-lb.sh).
//
// Output, all printed at the end (nothing interleaves with a live line):
//   sender:   LBPROC p=A nice=0 start_us= end_us= written= verified= corrupt= status=
//             LBNIC nic=K from=I bytes=b,b,...   (tx_bytes per 0.5 s bin, 20 a line)
//             LBCPU from_us= to_us= busy_pct=     (the interval all three run)
//             LBCPUBINS from=I pct=...            (busy % per 0.5 s bin)
//             LBBOND mode=.. hash=..
//             LBSLAVE nic=K mac=M                  (each NIC's own address)
//   receiver: LBRX p=A bytes= corrupt= first_us= last_us=
//             LBBINS p=A from=I bytes=b,b,...      (received bytes per 0.5 s bin)
//             LBFLOW p=A mac=M from=I bytes=...    (frame bytes per 0.5 s bin of
//                                                    p's TCP flow by source MAC)
//             LBFLOWSTAT frames= drops=            (the capture's own count)
// LBFLOW is how the sender's slave for each flow is seen: in balance-tlb
// each slave sends with its own MAC, so the receiver, which counts every
// incoming frame on a packet socket (its own CPU, not the measured
// sender's), tells which NIC carried which process in each bin.
//   both:     DONE ok | DONE fail <reason>
// Times are on each guest's own clock from t0: the sender's t0 is A's
// start; the receiver's is the arrival of A's header minus the sender's
// time in it (the one-way delay, well under 1 ms, is not subtracted).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/include/wire.h"
#include "benchnet.h"

#define LB_MAGIC 0x4c424e31u // "LBN1"
#define LB_PROBE 0xffu
#define LB_WARM 0x100u
#define LB_WARM_BYTES (64u * LB_PIECE)
#define LB_PIECE 1024u
#define LB_NPROC 3
#define LB_MAX_BINS 600
#define LB_BIN_US 500000u
#define LB_MAX_NICS 4
#define LB_HDR 32
#define LB_ANS 24

static const char proc_name[LB_NPROC] = { 'A', 'B', 'C' };

struct opts {
	const char *role;
	const char *server_ip;
	char nics[LB_MAX_NICS][16];
	int nnics;
	int port;
	double scale;
	int max_s;
	int ab_stop_s;
	int warm_s;
	int sport;
	int nice_low, nice_high;
	int idle_s; // receiver: give up when nothing arrives for this long
};

static uint64_t now_us(void) { return now_ns() / 1000u; }

static void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };
	nanosleep(&ts, NULL); // a stop signal cuts it short, as it should
}

// ------------------------------------------------------------ the pattern

static uint8_t pieces[256][LB_PIECE];

static void pieces_init(void)
{
	// wire_pattern(seq, i) = base(i) ^ (seq * 7): the key takes 256 values.
	for (uint32_t k = 0; k < 256; k++)
		for (uint32_t i = 0; i < LB_PIECE; i++)
			pieces[k][i] = (uint8_t)(wire_pattern(0, i) ^ k);
}

// The table row holding piece `n` of process p's stream.
static const uint8_t *piece_of(uint32_t p, uint64_t n)
{
	uint32_t seq = (uint32_t)n ^ (p << 24);
	return pieces[(uint8_t)(seq * 7u)];
}

static uint8_t lb_byte(uint32_t p, uint64_t off)
{
	uint32_t seq = (uint32_t)(off / LB_PIECE) ^ (p << 24);
	return wire_pattern(seq, (uint32_t)(off % LB_PIECE));
}

// Bytes among p[0..n) that differ from process `proc`'s stream at `off`.
static uint64_t count_bad(uint32_t proc, const uint8_t *p, size_t n, uint64_t off)
{
	uint64_t bad = 0;
	while (n) {
		uint32_t in = (uint32_t)(off % LB_PIECE);
		size_t k = LB_PIECE - in < n ? LB_PIECE - in : n;
		const uint8_t *want = piece_of(proc, off / LB_PIECE) + in;
		if (memcmp(p, want, k))
			for (size_t i = 0; i < k; i++)
				bad += p[i] != want[i];
		p += k, n -= k, off += k;
	}
	return bad;
}

// ---------------------------------------------------------------- helpers

// Reads a whole small file into buf (NUL-terminated); -1 if it cannot.
static int slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static uint64_t nic_tx_bytes(const char *nic)
{
	char path[96], buf[64];
	snprintf(path, sizeof path, "/sys/class/net/%s/statistics/tx_bytes", nic);
	return slurp(path, buf, sizeof buf) ? 0 : strtoull(buf, NULL, 10);
}

struct cpu_snap {
	uint64_t busy, total;
};

// The "cpu" line of /proc/stat: busy = everything but idle and iowait.
static struct cpu_snap cpu_now(void)
{
	char buf[512];
	struct cpu_snap s = { 0, 0 };
	unsigned long long v[10] = { 0 };
	if (slurp("/proc/stat", buf, sizeof buf) ||
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &v[7]) < 8)
		return s;
	for (int i = 0; i < 8; i++)
		s.total += v[i];
	s.busy = s.total - v[3] - v[4];
	return s;
}

static double cpu_pct(struct cpu_snap a, struct cpu_snap b)
{
	return b.total > a.total ? 100.0 * (double)(b.busy - a.busy) / (double)(b.total - a.total) : -1;
}

// Prints `tag from=I bytes=...` lines of 20 values each.
static void print_bins(const char *tag, const char *who, const uint64_t *v, int n)
{
	for (int i = 0; i < n; i += 20) {
		printf("%s %s from=%d bytes=", tag, who, i);
		for (int j = i; j < n && j < i + 20; j++)
			printf("%s%llu", j > i ? "," : "", (unsigned long long)v[j]);
		printf("\n");
	}
}

// ------------------------------------------------------------------ sender

struct plan {
	uint64_t writes;     // 1 KiB writes in all
	uint64_t per_round;  // writes between sleeps (0: no sleeps)
	uint64_t start_us;   // from t0
	int nice;
};

// What a child tells the parent at its end (one write to a pipe).
struct proc_end {
	uint32_t p;
	int status; // 0 ok, 1 stopped early, 2 no answer, 3 connect failed
	uint32_t retrans; // TCP segments this connection sent again
	uint64_t start_us, end_us, written, verified, corrupt;
};

static const char *status_name[] = { "ok", "stopped", "no-answer", "no-connection" };
static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

// sport: the source port (0: any).
static int connect_to(const struct opts *o, int tries, int sport)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port) };
	if (inet_pton(AF_INET, o->server_ip, &sa.sin_addr) != 1)
		die("bad --server-ip %s", o->server_ip);
	for (int i = 0; i < tries && !stop_flag; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		set_timeouts(fd, 1000);
		if (sport) {
			int one = 1;
			struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons((uint16_t)sport) };
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
			if (bind(fd, (struct sockaddr *)&me, sizeof me)) {
				close(fd);
				sleep_us(200000);
				continue;
			}
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			return fd;
		close(fd);
		sleep_us(200000);
	}
	return -1;
}

static int send_header(int fd, uint32_t p, uint64_t bytes, uint64_t t_us)
{
	uint8_t h[LB_HDR] = { 0 };
	put_be32(h, LB_MAGIC);
	put_be32(h + 4, p);
	put_be64(h + 8, bytes);
	put_be64(h + 16, t_us);
	return write_full(fd, h, sizeof h);
}

// Writes piece `n` of p's stream whole, adding what went out to *sent; the
// 200 ms send timeout lets a stop request through a blocked write.  0 when
// done, -1 when stopped or broken (*sent then counts a partial piece).
static int write_piece(int fd, uint32_t p, uint64_t n, uint64_t *sent)
{
	const uint8_t *src = piece_of(p, n);
	size_t left = LB_PIECE;
	while (left) {
		ssize_t r = write(fd, src + LB_PIECE - left, left);
		if (r > 0) {
			left -= (size_t)r;
			*sent += (uint64_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR) && !stop_flag)
			continue;
		return -1;
	}
	return 0;
}

// One sending process: connect, send its pattern, collect the answer.
static void run_proc(const struct opts *o, uint32_t p, const struct plan *pl, uint64_t t0, int report)
{
	struct proc_end e = { .p = p, .start_us = now_us() - t0 };
	setpriority(PRIO_PROCESS, 0, pl->nice);
	int fd = connect_to(o, 25, o->sport ? o->sport + 4 * (int)p : 0);
	if (fd < 0) {
		e.status = 3;
		e.end_us = now_us() - t0;
		if (write(report, &e, sizeof e) < 0)
			_exit(1);
		_exit(0);
	}
	set_timeouts(fd, 200);
	uint64_t n = 0;
	if (send_header(fd, p, pl->writes * LB_PIECE, now_us() - t0))
		stop_flag = 1;
	while (n < pl->writes && !stop_flag) {
		if (write_piece(fd, p, n, &e.written))
			break;
		n++;
		if (pl->per_round && n % pl->per_round == 0 && n < pl->writes)
			sleep_us(1000000);
	}
	e.status = n < pl->writes ? 1 : 0;
	shutdown(fd, SHUT_WR);
	set_timeouts(fd, 15000);
	uint8_t ans[LB_ANS];
	if (read_full(fd, ans, sizeof ans) == 0 && get_be32(ans) == LB_MAGIC) {
		e.verified = get_be64(ans + 8);
		e.corrupt = get_be64(ans + 16);
	} else {
		e.status = 2;
	}
	e.end_us = now_us() - t0;
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
		e.retrans = ti.tcpi_total_retrans;
	close(fd);
	if (write(report, &e, sizeof e) < 0)
		_exit(1);
	_exit(0);
}

// Before t0: one probe connection, answered at once, so that the receiver
// listens and ARP is resolved before A's clock starts.
static void probe(const struct opts *o)
{
	int fd = connect_to(o, 150, 0); // 30 s
	if (fd < 0)
		die("no receiver at %s:%d", o->server_ip, o->port);
	uint8_t ans[LB_ANS];
	set_timeouts(fd, 5000);
	if (send_header(fd, LB_PROBE, 0, 0) || read_full(fd, ans, sizeof ans) || get_be32(ans) != LB_MAGIC)
		die("probe: no answer");
	close(fd);
}

// One warm-up connection per process (see the head of the file).
static void warm_up(const struct opts *o)
{
	for (uint32_t p = 0; p < LB_NPROC; p++) {
		int fd = connect_to(o, 25, o->sport + 4 * (int)p);
		if (fd < 0)
			die("warm-up: no connection from port %d", o->sport + 4 * (int)p);
		uint64_t sent = 0;
		uint8_t ans[LB_ANS];
		set_timeouts(fd, 5000);
		if (send_header(fd, p | LB_WARM, LB_WARM_BYTES, 0))
			die("warm-up: header: %s", strerror(errno));
		for (uint64_t n = 0; n < LB_WARM_BYTES / LB_PIECE; n++)
			if (write_piece(fd, p, n, &sent))
				die("warm-up: write: %s", strerror(errno));
		if (read_full(fd, ans, sizeof ans) || get_be32(ans) != LB_MAGIC)
			die("warm-up: no answer");
		struct linger lg = { 1, 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		close(fd);
		printf("LBWARM p=%c bytes=%llu sport=%d\n", proc_name[p], (unsigned long long)sent,
		       o->sport + 4 * (int)p);
	}
	fflush(stdout);
	sleep_us((uint64_t)o->warm_s * 1000000u);
}

static void print_slaves(const struct opts *o)
{
	char path[96], mac[64];
	for (int k = 0; k < o->nnics; k++) {
		snprintf(path, sizeof path, "/sys/class/net/%s/address", o->nics[k]);
		if (slurp(path, mac, sizeof mac))
			continue;
		mac[strcspn(mac, " \n")] = 0;
		printf("LBSLAVE nic=%d mac=%s\n", k, mac);
	}
}

static void print_bond(void)
{
	char mode[64] = "-", hash[64] = "-";
	slurp("/sys/class/net/bond0/bonding/mode", mode, sizeof mode);
	slurp("/sys/class/net/bond0/bonding/xmit_hash_policy", hash, sizeof hash);
	mode[strcspn(mode, " \n")] = 0;
	hash[strcspn(hash, " \n")] = 0;
	printf("LBBOND mode=%s hash=%s\n", mode, hash);
}

struct sender {
	struct plan plan[LB_NPROC];
	pid_t pid[LB_NPROC];
	bool started[LB_NPROC], ended[LB_NPROC];
	struct proc_end end[LB_NPROC];
	uint64_t nic0[LB_MAX_NICS];
	uint64_t nic_bins[LB_MAX_NICS][LB_MAX_BINS];
	double cpu_bins[LB_MAX_BINS];
	int nbins;
	struct cpu_snap cpu_c, cpu_first_end, tick_cpu;
	uint64_t c_start_us, first_end_us;
	bool ab_stopped;
	uint64_t t0, stop_at; // stop_at: when --max-s stopped everything
	int pipe[2];          // children -> parent: struct proc_end
	int nended;
};

static void plans(const struct opts *o, struct plan pl[LB_NPROC])
{
	double f = o->scale;
	pl[0] = (struct plan){ (uint64_t)(1000000 / f + 0.5), 0, 0, o->nice_low };
	uint64_t round = (uint64_t)(10000 / f + 0.5);
	pl[1] = (struct plan){ 50 * round, round, 4000000, o->nice_low };
	pl[2] = (struct plan){ (uint64_t)(200000 / f + 0.5), 0, 8000000, o->nice_high };
}

static void take_tick(struct sender *s, const struct opts *o)
{
	if (s->nbins >= LB_MAX_BINS)
		return;
	for (int k = 0; k < o->nnics; k++) {
		uint64_t v = nic_tx_bytes(o->nics[k]);
		s->nic_bins[k][s->nbins] = v - s->nic0[k];
		s->nic0[k] = v;
	}
	struct cpu_snap c = cpu_now();
	s->cpu_bins[s->nbins] = cpu_pct(s->tick_cpu, c);
	s->tick_cpu = c;
	s->nbins++;
}

// The end of the interval all three run (the first to end or be stopped).
static void mark_first_end(struct sender *s, uint64_t t0)
{
	if (!s->first_end_us && s->started[2]) {
		s->first_end_us = now_us() - t0;
		s->cpu_first_end = cpu_now();
	}
}

static void take_end(struct sender *s, const struct proc_end *e, uint64_t t0)
{
	if (e->p >= LB_NPROC || s->ended[e->p])
		return;
	s->ended[e->p] = true;
	s->end[e->p] = *e;
	mark_first_end(s, t0);
}

// Tells the processes in `which` (a bit each) that have started to stop;
// those that have not started never will.  Returns how many never started.
static int stop_procs(struct sender *s, unsigned which)
{
	int never = 0;
	for (int p = 0; p < LB_NPROC; p++) {
		if (!(which & 1u << p) || s->ended[p])
			continue;
		if (s->started[p]) {
			kill(s->pid[p], SIGUSR1);
			continue;
		}
		s->started[p] = s->ended[p] = true;
		s->end[p] = (struct proc_end){ .p = (uint32_t)p, .status = 1 };
		never++;
	}
	return never;
}

static void print_sender(const struct sender *s, const struct opts *o)
{
	for (int p = 0; p < LB_NPROC; p++) {
		const struct proc_end *e = &s->end[p];
		if (!s->ended[p]) {
			printf("LBPROC p=%c nice=%d status=lost\n", proc_name[p], s->plan[p].nice);
			continue;
		}
		printf("LBPROC p=%c nice=%d planned=%llu start_us=%llu end_us=%llu written=%llu verified=%llu "
		       "corrupt=%llu retrans=%u status=%s\n",
		       proc_name[p], s->plan[p].nice, (unsigned long long)(s->plan[p].writes * LB_PIECE),
		       (unsigned long long)e->start_us, (unsigned long long)e->end_us, (unsigned long long)e->written,
		       (unsigned long long)e->verified, (unsigned long long)e->corrupt, e->retrans,
		       status_name[e->status]);
	}
	for (int k = 0; k < o->nnics; k++) {
		char who[32];
		snprintf(who, sizeof who, "nic=%d", k);
		print_bins("LBNIC", who, s->nic_bins[k], s->nbins);
	}
	printf("LBCPU from_us=%llu to_us=%llu busy_pct=%.2f\n", (unsigned long long)s->c_start_us,
	       (unsigned long long)s->first_end_us, cpu_pct(s->cpu_c, s->cpu_first_end));
	for (int i = 0; i < s->nbins; i += 20) {
		printf("LBCPUBINS from=%d pct=", i);
		for (int j = i; j < s->nbins && j < i + 20; j++)
			printf("%s%.1f", j > i ? "," : "", s->cpu_bins[j]);
		printf("\n");
	}
}

// Where frames may have been dropped: each NIC's counters.  (A tbf's own
// drops are not here: busybox tc has no -s.)
static void print_drops(const struct opts *o)
{
	static const char *ctr[] = { "tx_dropped", "rx_dropped", "rx_missed_errors", "rx_over_errors" };
	char path[128], buf[64];
	for (int k = 0; k < o->nnics; k++) {
		printf("LBDROPS nic=%s", o->nics[k]);
		for (size_t i = 0; i < sizeof ctr / sizeof ctr[0]; i++) {
			snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", o->nics[k], ctr[i]);
			printf(" %s=%s", ctr[i], slurp(path, buf, sizeof buf) ? "-" : strtok(buf, "\n"));
		}
		printf("\n");
	}
}

// Forks each process whose start time has come (C's start opens the CPU
// interval).  The child never returns.
static void start_due(struct sender *s, const struct opts *o, uint64_t t)
{
	for (int p = 0; p < LB_NPROC; p++) {
		if (s->started[p] || t < s->plan[p].start_us)
			continue;
		if (p == 2) {
			s->c_start_us = t;
			s->cpu_c = cpu_now();
		}
		s->started[p] = true;
		s->pid[p] = fork();
		if (s->pid[p] < 0)
			die("fork: %s", strerror(errno));
		if (s->pid[p] == 0) {
			close(s->pipe[0]);
			run_proc(o, (uint32_t)p, &s->plan[p], s->t0, s->pipe[1]);
		}
	}
}

// A and B stop at --ab-stop-s; past --max-s everything does, and 30 s
// later what still runs is killed.  False once the run must end.
static bool apply_stops(struct sender *s, const struct opts *o, uint64_t t)
{
	if (!s->ab_stopped && t >= (uint64_t)o->ab_stop_s * 1000000u) {
		s->ab_stopped = true;
		mark_first_end(s, s->t0);
		s->nended += stop_procs(s, 3u);
	}
	if (!s->stop_at && t >= (uint64_t)o->max_s * 1000000u) {
		s->stop_at = t;
		s->nended += stop_procs(s, 7u);
	}
	if (s->stop_at && t > s->stop_at + 30000000u) {
		for (int p = 0; p < LB_NPROC; p++)
			if (!s->ended[p])
				kill(s->pid[p], SIGKILL);
		return false;
	}
	return true;
}

// Waits (at most 100 ms, or to the next tick or start) for a child's end.
static void wait_event(struct sender *s, uint64_t t, uint64_t next_tick)
{
	uint64_t wake = next_tick;
	for (int p = 0; p < LB_NPROC; p++)
		if (!s->started[p] && s->plan[p].start_us < wake)
			wake = s->plan[p].start_us;
	struct pollfd pf = { s->pipe[0], POLLIN, 0 };
	int ms = wake > t ? (int)((wake - t + 999) / 1000) : 0;
	if (poll(&pf, 1, ms > 100 ? 100 : ms) <= 0)
		return;
	struct proc_end e;
	if (read(s->pipe[0], &e, sizeof e) == (ssize_t)sizeof e && e.p < LB_NPROC && !s->ended[e.p]) {
		take_end(s, &e, s->t0);
		s->nended++;
	}
}

static void print_plan(const struct sender *s, const struct opts *o)
{
	char up[64] = "0";
	slurp("/proc/uptime", up, sizeof up);
	printf("LBPLAN scale=%g A=%llu B=%llux%llu C=%llu ab_stop_s=%d max_s=%d nice=%d,%d bin_us=%u warm_s=%d "
	       "uptime_s=%.2f\n",
	       o->scale, (unsigned long long)s->plan[0].writes, 50ull, (unsigned long long)s->plan[1].per_round,
	       (unsigned long long)s->plan[2].writes, o->ab_stop_s, o->max_s, o->nice_low, o->nice_high, LB_BIN_US,
	       o->warm_s, atof(up));
	fflush(stdout);
}

static int run_sender(const struct opts *o)
{
	static struct sender s;
	plans(o, s.plan);
	if (pipe2(s.pipe, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	print_bond();
	print_slaves(o);
	probe(o);
	if (o->warm_s > 0) {
		if (!o->sport)
			die("--warm-s needs --sport");
		warm_up(o);
	}
	print_plan(&s, o);
	for (int k = 0; k < o->nnics; k++)
		s.nic0[k] = nic_tx_bytes(o->nics[k]);
	s.tick_cpu = cpu_now();
	s.t0 = now_us();
	uint64_t next_tick = LB_BIN_US;
	while (s.nended < LB_NPROC) {
		uint64_t t = now_us() - s.t0;
		start_due(&s, o, t);
		if (t >= next_tick) {
			take_tick(&s, o);
			next_tick += LB_BIN_US;
		}
		if (!apply_stops(&s, o, t))
			break;
		wait_event(&s, t, next_tick);
	}
	for (int p = 0; p < LB_NPROC; p++)
		if (s.pid[p] > 0)
			waitpid(s.pid[p], NULL, 0);
	take_tick(&s, o); // the last, partial bin
	mark_first_end(&s, s.t0);
	print_sender(&s, o);
	print_drops(o);
	bool ok = s.ended[2] && s.end[2].status == 0;
	for (int p = 0; p < LB_NPROC; p++)
		ok = ok && s.ended[p] && s.end[p].corrupt == 0 && s.end[p].verified == s.end[p].written;
	if (!ok)
		die("C did not finish, or bytes were lost or corrupt");
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- receiver

struct rx_conn {
	int fd;
	uint8_t hdr[LB_HDR];
	uint32_t got_hdr;
	uint32_t p;
	uint64_t off, bad, first_us, last_us;
	uint64_t warm_left; // a warm-up connection: bytes still to come
};

struct receiver {
	struct rx_conn c[8];
	int nconn;
	bool t0_known;
	uint64_t t0; // on this guest's clock
	uint64_t bins[LB_NPROC][LB_MAX_BINS];
	int nbins;
	bool done[LB_NPROC];
	struct rx_conn fin[LB_NPROC];
	// The flows seen per source MAC (a packet socket on every interface).
	int cap;
	uint8_t mac[LB_MAX_NICS][6];
	int nmac;
	uint64_t flow[LB_NPROC][LB_MAX_NICS][LB_MAX_BINS];
	uint64_t frames;
};

// One incoming frame off the packet socket: its bytes go to the bin of the
// process whose source port it carries and of its source MAC.  False when
// none was waiting.
static bool cap_frame(struct receiver *r, const struct opts *o)
{
	uint8_t f[128];
	struct sockaddr_ll from;
	socklen_t fl = sizeof from;
	ssize_t n = recvfrom(r->cap, f, sizeof f, MSG_TRUNC | MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	if (n < 0)
		return false;
	if (n < 14 + 20 + 4 || from.sll_pkttype == PACKET_OUTGOING || !r->t0_known)
		return true;
	const uint8_t *ip = f + 14;
	size_t ihl = (size_t)(ip[0] & 15) * 4;
	if (f[12] != 0x08 || f[13] != 0 || ip[9] != 6 || 14 + ihl + 4 > sizeof f)
		return true;
	int sport = (ip[ihl] << 8 | ip[ihl + 1]) - o->sport;
	if (sport < 0 || sport % 4 || sport / 4 >= LB_NPROC)
		return true;
	int m = 0;
	while (m < r->nmac && memcmp(r->mac[m], f + 6, 6))
		m++;
	if (m == r->nmac) {
		if (m == LB_MAX_NICS)
			return true;
		memcpy(r->mac[r->nmac++], f + 6, 6);
	}
	uint64_t now = now_us(), i = now > r->t0 ? (now - r->t0) / LB_BIN_US : 0;
	r->flow[sport / 4][m][i < LB_MAX_BINS ? i : LB_MAX_BINS - 1] += (uint64_t)n;
	r->frames++;
	return true;
}

static void print_flows(const struct receiver *r)
{
	for (int p = 0; p < LB_NPROC; p++)
		for (int m = 0; m < r->nmac; m++) {
			char who[40];
			const uint8_t *a = r->mac[m];
			snprintf(who, sizeof who, "p=%c mac=%02x:%02x:%02x:%02x:%02x:%02x", proc_name[p], a[0], a[1],
				 a[2], a[3], a[4], a[5]);
			print_bins("LBFLOW", who, r->flow[p][m], r->nbins);
		}
	struct tpacket_stats st = { 0, 0 };
	socklen_t sl = sizeof st;
	getsockopt(r->cap, SOL_PACKET, PACKET_STATISTICS, &st, &sl);
	printf("LBFLOWSTAT frames=%llu drops=%u\n", (unsigned long long)r->frames, st.tp_drops);
}

static void answer(int fd, uint64_t verified, uint64_t bad)
{
	uint8_t a[LB_ANS];
	put_be32(a, LB_MAGIC);
	put_be32(a + 4, 0);
	put_be64(a + 8, verified);
	put_be64(a + 16, bad);
	set_timeouts(fd, 2000);
	if (write_full(fd, a, sizeof a))
		fprintf(stderr, "lbbench: answer: %s\n", strerror(errno));
}

static void rx_bin(struct receiver *r, uint32_t p, uint64_t now, size_t n)
{
	if (!r->t0_known || p >= LB_NPROC)
		return;
	uint64_t i = now > r->t0 ? (now - r->t0) / LB_BIN_US : 0;
	if (i >= LB_MAX_BINS)
		i = LB_MAX_BINS - 1;
	r->bins[p][i] += n;
	if ((int)i + 1 > r->nbins)
		r->nbins = (int)i + 1;
}

// The header is complete: a probe is answered, a process is registered.
// Returns false when the connection is finished with.
static bool rx_header(struct receiver *r, struct rx_conn *c, uint64_t now)
{
	if (get_be32(c->hdr) != LB_MAGIC)
		return false;
	c->p = get_be32(c->hdr + 4);
	if (c->p == LB_PROBE) {
		answer(c->fd, 0, 0);
		return false;
	}
	if (c->p & LB_WARM) {
		c->warm_left = get_be64(c->hdr + 8);
		return c->warm_left > 0 && c->warm_left <= LB_WARM_BYTES;
	}
	if (c->p >= LB_NPROC || r->done[c->p])
		return false;
	if (!r->t0_known) {
		r->t0 = now - get_be64(c->hdr + 16);
		r->t0_known = true;
	}
	return true;
}

// Reads what is there; false at EOF or error (the connection then ends).
static bool rx_read(struct receiver *r, struct rx_conn *c, uint8_t *buf, size_t size)
{
	ssize_t n = read(c->fd, buf, size);
	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	uint64_t now = now_us();
	size_t used = 0;
	if (c->got_hdr < LB_HDR) {
		used = LB_HDR - c->got_hdr < (size_t)n ? LB_HDR - c->got_hdr : (size_t)n;
		memcpy(c->hdr + c->got_hdr, buf, used);
		c->got_hdr += (uint32_t)used;
		if (c->got_hdr == LB_HDR && !rx_header(r, c, now))
			return false;
	}
	size_t k = (size_t)n - used;
	if (!k)
		return true;
	if (c->p & LB_WARM) {
		// Answered once all arrived; the sender then resets it.
		if (c->warm_left && k >= c->warm_left)
			answer(c->fd, 0, 0);
		c->warm_left = k >= c->warm_left ? 0 : c->warm_left - k;
		return true;
	}
	c->bad += count_bad(c->p, buf + used, k, c->off);
	c->off += k;
	if (!c->first_us)
		c->first_us = now - r->t0;
	c->last_us = now - r->t0;
	rx_bin(r, c->p, now, k);
	return true;
}

static void rx_close(struct receiver *r, int i, bool eof)
{
	struct rx_conn *c = &r->c[i];
	if (c->got_hdr == LB_HDR && c->p < LB_NPROC && !r->done[c->p]) {
		if (eof)
			answer(c->fd, c->off - c->bad, c->bad);
		r->done[c->p] = true;
		r->fin[c->p] = *c;
	}
	close(c->fd);
	r->c[i] = r->c[--r->nconn];
}

static int listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 8))
		die("listen on %d: %s", port, strerror(errno));
	return fd;
}

static int run_receiver(const struct opts *o)
{
	static struct receiver r;
	static uint8_t buf[1 << 16];
	int lfd = listen_on(o->port);
	r.cap = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (r.cap < 0)
		die("packet socket: %s", strerror(errno));
	int capbuf = 4 << 20;
	setsockopt(r.cap, SOL_SOCKET, SO_RCVBUF, &capbuf, sizeof capbuf);
	printf("LBREADY port=%d\n", o->port);
	fflush(stdout);
	uint64_t last = now_us();
	int ndone = 0;
	while (ndone < LB_NPROC) {
		struct pollfd pf[10];
		pf[0] = (struct pollfd){ lfd, POLLIN, 0 };
		for (int i = 0; i < r.nconn; i++)
			pf[i + 1] = (struct pollfd){ r.c[i].fd, POLLIN, 0 };
		pf[r.nconn + 1] = (struct pollfd){ r.cap, POLLIN, 0 };
		int n = poll(pf, (nfds_t)r.nconn + 2, 500);
		if (pf[r.nconn + 1].revents & POLLIN)
			for (int k = 0; k < 256 && cap_frame(&r, o); k++)
				;
		uint64_t now = now_us();
		if (n <= 0) {
			if (now - last > (uint64_t)o->idle_s * 1000000u)
				break;
			continue;
		}
		last = now;
		for (int i = r.nconn - 1; i >= 0; i--) {
			if (!(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!rx_read(&r, &r.c[i], buf, sizeof buf)) {
				uint32_t p = r.c[i].p;
				bool counted = r.c[i].got_hdr == LB_HDR && p < LB_NPROC && !r.done[p];
				rx_close(&r, i, true);
				ndone += counted;
			}
		}
		if (pf[0].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0 && r.nconn < 8) {
				int big = 4 << 20;
				setsockopt(c, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
				r.c[r.nconn++] = (struct rx_conn){ .fd = c };
			} else if (c >= 0) {
				close(c);
			}
		}
	}
	for (int i = r.nconn - 1; i >= 0; i--)
		rx_close(&r, i, false);
	close(lfd);
	print_drops(o);
	for (int p = 0; p < LB_NPROC; p++) {
		const struct rx_conn *c = &r.fin[p];
		char who[8];
		printf("LBRX p=%c bytes=%llu corrupt=%llu first_us=%llu last_us=%llu%s\n", proc_name[p],
		       (unsigned long long)c->off, (unsigned long long)c->bad, (unsigned long long)c->first_us,
		       (unsigned long long)c->last_us, r.done[p] ? "" : " missing=1");
		snprintf(who, sizeof who, "p=%c", proc_name[p]);
		print_bins("LBBINS", who, r.bins[p], r.nbins);
	}
	print_flows(&r);
	if (ndone < LB_NPROC)
		die("only %d of %d processes ended their connection", ndone, LB_NPROC);
	printf("DONE ok\n");
	return 0;
}

// ------------------------------------------------------------------- main

static int selfcheck(void)
{
	pieces_init();
	uint8_t b[3000];
	for (uint32_t p = 0; p < LB_NPROC; p++)
		for (uint64_t off = 0; off < 5000; off += 777) {
			for (size_t i = 0; i < sizeof b; i++)
				b[i] = lb_byte(p, off + i);
			if (count_bad(p, b, sizeof b, off))
				return printf("selfcheck: pattern of %u at %llu\n", p, (unsigned long long)off), 1;
			b[100] ^= 1;
			if (count_bad(p, b, sizeof b, off) != 1 || !count_bad((p + 1) % LB_NPROC, b, sizeof b, off))
				return printf("selfcheck: a bad byte or another process not caught\n"), 1;
		}
	printf("selfcheck ok\n");
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: lbbench --role sender|receiver [--server-ip IP] [--nics eth0,eth1] [--port N]\n"
			"       [--scale F] [--ab-stop-s S] [--max-s S] [--sport N] [--warm-s S] [--nice-low N] [--nice-high N]\n"
			"       [--idle-s S] | --selfcheck\n");
	exit(2);
}

static void parse_nics(struct opts *o, const char *s)
{
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s", s);
	o->nnics = 0;
	for (char *t = strtok(tmp, ", "); t && o->nnics < LB_MAX_NICS; t = strtok(NULL, ", "))
		snprintf(o->nics[o->nnics++], sizeof o->nics[0], "%s", t);
}

// Sets the integer option named a to v; false if a names none.
static bool parse_int_opt(struct opts *o, const char *a, const char *v)
{
	const struct {
		const char *name;
		int *field;
	} ints[] = {
		{ "--port", &o->port }, { "--max-s", &o->max_s }, { "--ab-stop-s", &o->ab_stop_s },
		{ "--sport", &o->sport }, { "--warm-s", &o->warm_s }, { "--nice-low", &o->nice_low },
		{ "--nice-high", &o->nice_high }, { "--idle-s", &o->idle_s },
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if (!strcmp(a, ints[i].name)) {
			*ints[i].field = atoi(v);
			return true;
		}
	return false;
}

int main(int argc, char **argv)
{
	struct opts o = { .role = "", .server_ip = "10.0.0.1", .port = 5301, .scale = 1, .max_s = 120,
			  .ab_stop_s = 40, .sport = 40000, .nice_low = 0, .nice_high = -10, .idle_s = 120 };
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--selfcheck"))
			return selfcheck();
		if (!v)
			usage();
		if (!strcmp(a, "--role"))
			o.role = v;
		else if (!strcmp(a, "--server-ip"))
			o.server_ip = v;
		else if (!strcmp(a, "--nics"))
			parse_nics(&o, v);
		else if (!strcmp(a, "--scale"))
			o.scale = atof(v);
		else if (!parse_int_opt(&o, a, v))
			usage();
		i++;
	}
	int max_s = (int)((uint64_t)LB_MAX_BINS * LB_BIN_US / 1000000u) - 40;
	if (!(o.scale >= 1 && o.scale <= 1000) || o.max_s < 10 || o.max_s > max_s || o.ab_stop_s < 1 ||
	    o.port <= 0 || o.sport < 0 || o.sport > 65000 || o.warm_s < 0 || o.warm_s > 60)
		die("bad options: --scale 1..1000, --max-s 10..%d, --ab-stop-s >= 1, --sport 0..65000, --warm-s 0..60",
		    max_s);
	pieces_init();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_stop }; // no SA_RESTART: a blocked call returns
	sigaction(SIGUSR1, &sa, NULL);
	if (!strcmp(o.role, "sender")) {
		if (!o.nnics)
			die("--nics needed");
		return run_sender(&o);
	}
	if (!strcmp(o.role, "receiver"))
		return run_receiver(&o);
	usage();
	return 2;
}
