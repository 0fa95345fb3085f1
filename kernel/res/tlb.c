// TLB shootdown bookkeeping and protocol (tlb.h). Requests travel in one
// mailbox per CPU: the requester fills it, bumps its sequence number and
// sends the IPI; the target flushes what names its CR3 and writes the
// number back. One requester at a time (tlb_lock); a target answers from
// its IPI handler (no lock: the requester may hold the kernel lock) or,
// with interrupts off, from any wait for a lock (lock_set_spin_hook).
#include "tlb.h"
#include "vspace.h"
#include "../lock.h"
#include "../arch/x86_64/cpu.h"

uint32_t tlb_space_cpus[NVSPACE];
uint64_t tlb_ipis, tlb_requests, tlb_deferred;
uint64_t tlb_wait_tsc, tlb_answer_tsc, tlb_answers;

struct tlb_range {
	paddr_t root;
	uint64_t lo, hi; // [lo, hi) virtual addresses
	bool full;       // more than tlb_flush_threshold pages: flush everything
};

struct tlb_mbox {
	uint64_t seq, done; // the last request sent, the last answered
	int n;
	bool leave;         // load leave_to if CR3 names r[0].root
	paddr_t leave_to;
	struct tlb_range r[TLB_BATCH_SPACES];
};

struct tlb_batch {
	bool open;
	int n;
	uint32_t cpus; // whom the gathered ranges go to
	struct tlb_range r[TLB_BATCH_SPACES];
};

static struct tlb_mbox mbox[MAXCPU];
static struct tlb_batch batch[MAXCPU];
static int loaded_slot[MAXCPU];     // the space slot this CPU's CR3 names
static paddr_t loaded_root[MAXCPU];
// Each CPU's state word: CPU_USER while it runs a process (from before
// its CR3 is loaded for it), CPU_STALE when a deferred flush is due before
// it next runs one. One word, changed by atomic operations only, so that a
// requester without the kernel lock and a CPU starting a process agree:
// either the requester sees CPU_USER (and sends an IPI) or its mark is
// there when that CPU loads CR3 (tlb_note_load).
#define CPU_USER 1u
#define CPU_STALE 2u
static uint32_t cpu_state[MAXCPU];
static paddr_t kroot;
static struct spinlock tlb_lock;

void tlb_init(paddr_t kernel_root)
{
	for (int c = 0; c < MAXCPU; c++) {
		mbox[c] = (struct tlb_mbox){ 0 };
		batch[c] = (struct tlb_batch){ 0 };
		cpu_state[c] = 0;
	}
	for (int s = 0; s < NVSPACE; s++)
		tlb_space_cpus[s] = 0;
	tlb_ipis = tlb_requests = tlb_deferred = 0;
	tlb_wait_tsc = tlb_answer_tsc = tlb_answers = 0;
	kroot = kernel_root;
	spin_init(&tlb_lock, "tlb", LK_TLB);
	for (int c = 0; c < MAXCPU; c++) {
		loaded_root[c] = kernel_root;
		loaded_slot[c] = 0;
	}
	tlb_space_cpus[0] = (1u << MAXCPU) - 1;
}

static void flush_local(uint64_t va, uint64_t n, bool full)
{
	if (full || n > tlb_flush_threshold) {
		arch_flush_tlb();
		tlb_full_flushes++;
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		arch_invlpg(va + i * PAGE_SIZE);
	tlb_page_flushes += n;
}

bool tlb_note_load(int slot, paddr_t root)
{
	int me = arch_cpu_id();
	uint32_t bit = 1u << me;
	if (loaded_slot[me] != slot) {
		__atomic_fetch_and(&tlb_space_cpus[loaded_slot[me]], ~bit, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&tlb_space_cpus[slot], bit, __ATOMIC_SEQ_CST);
	}
	loaded_slot[me] = slot;
	loaded_root[me] = root;
	// After the set names this CPU (a requester that misses the bit wrote
	// its entries before this CR3 load reads them).
	return __atomic_fetch_and(&cpu_state[me], ~CPU_STALE, __ATOMIC_SEQ_CST) & CPU_STALE;
}

void tlb_cpu_user(bool running)
{
	uint32_t *s = &cpu_state[arch_cpu_id()];
	if (running)
		__atomic_fetch_or(s, CPU_USER, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(s, ~CPU_USER, __ATOMIC_SEQ_CST);
}

// CPU c, in a changed space's set: true when it runs a process (it gets
// the IPI), else it is marked stale, unless it started one meanwhile.
static bool mark_or_live(int c)
{
	uint32_t s = __atomic_load_n(&cpu_state[c], __ATOMIC_SEQ_CST);
	for (;;) {
		if (s & CPU_USER)
			return true;
		if (__atomic_compare_exchange_n(&cpu_state[c], &s, s | CPU_STALE, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return false;
	}
}

void tlb_answer(void)
{
	int me = arch_cpu_id();
	struct tlb_mbox *m = &mbox[me];
	uint64_t s = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
	if (s == m->done)
		return;
	uint64_t t0 = arch_rdtsc();
	paddr_t cur = loaded_root[me];
	for (int i = 0; i < m->n; i++)
		if (m->r[i].root == cur)
			flush_local(m->r[i].lo, (m->r[i].hi - m->r[i].lo) / PAGE_SIZE, m->r[i].full);
	if (m->leave && cur == m->r[0].root) {
		arch_load_root(m->leave_to);
		loaded_root[me] = m->leave_to;
	}
	// The answer's own cost.
	__atomic_add_fetch(&tlb_answer_tsc, arch_rdtsc() - t0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&tlb_answers, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&m->done, s, __ATOMIC_RELEASE);
}

// One request to every CPU of `targets`, one IPI each; returns when all
// answered. The waiting answers requests too (none can come while the
// lock is held, but the wait must never be what another CPU waits on).
static void send(uint32_t targets, const struct tlb_range *r, int n, bool leave)
{
	spin_lock(&tlb_lock);
	for (uint32_t left = targets; left; left &= left - 1) {
		int c = __builtin_ctz(left);
		struct tlb_mbox *m = &mbox[c];
		for (int i = 0; i < n; i++)
			m->r[i] = r[i];
		m->n = n;
		m->leave = leave;
		m->leave_to = kroot;
		__atomic_store_n(&m->seq, m->seq + 1, __ATOMIC_RELEASE);
		arch_send_ipi(c, VEC_TLB);
		tlb_ipis++;
	}
	uint64_t t0 = arch_rdtsc();
	for (uint32_t left = targets; left; left &= left - 1) {
		int c = __builtin_ctz(left);
		while (__atomic_load_n(&mbox[c].done, __ATOMIC_ACQUIRE) != mbox[c].seq)
			arch_pause();
	}
	tlb_wait_tsc += arch_rdtsc() - t0; // the IPI's flight and the answers
	tlb_requests++;
	spin_unlock(&tlb_lock);
}

static void batch_flush(struct tlb_batch *b)
{
	if (b->n && b->cpus)
		send(b->cpus, b->r, b->n, false);
	b->n = 0;
	b->cpus = 0;
}

static void batch_add(struct tlb_batch *b, uint32_t cpus, const struct tlb_range *r)
{
	for (int i = 0; i < b->n; i++) {
		struct tlb_range *e = &b->r[i];
		if (e->root != r->root)
			continue;
		e->lo = r->lo < e->lo ? r->lo : e->lo;
		e->hi = r->hi > e->hi ? r->hi : e->hi;
		e->full |= r->full || (e->hi - e->lo) / PAGE_SIZE > tlb_flush_threshold;
		b->cpus |= cpus;
		return;
	}
	if (b->n == TLB_BATCH_SPACES)
		batch_flush(b);
	b->r[b->n++] = *r;
	b->cpus |= cpus;
}

void tlb_invalidate(int slot, paddr_t root, uint64_t va, uint64_t n)
{
	int me = arch_cpu_id();
	// The entries written before the set is read (tlb_note_load's order).
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t m = __atomic_load_n(&tlb_space_cpus[slot], __ATOMIC_SEQ_CST);
	bool full = n > tlb_flush_threshold;
	if (m >> me & 1)
		flush_local(va, n, full);
	m &= ~(1u << me);
	uint32_t now = 0;
	for (uint32_t left = m; left; left &= left - 1) {
		int c = __builtin_ctz(left);
		if (mark_or_live(c)) {
			now |= 1u << c;
		} else { // reloads CR3 before it runs a process
			__atomic_add_fetch(&tlb_deferred, 1, __ATOMIC_RELAXED);
		}
	}
	if (!now)
		return;
	struct tlb_range r = { .root = root, .lo = va, .hi = full ? va : va + n * PAGE_SIZE,
			       .full = full };
	if (batch[me].open)
		batch_add(&batch[me], now, &r);
	else
		send(now, &r, 1, false);
}

void tlb_leave(int slot, paddr_t root, paddr_t kernel_root)
{
	int me = arch_cpu_id();
	uint32_t m = tlb_space_cpus[slot] & ~(1u << me);
	if (!m)
		return;
	struct tlb_range r = { .root = root, .full = true };
	kroot = kernel_root;
	send(m, &r, 1, true);
	for (int c = 0; c < MAXCPU; c++) {
		if (!(m >> c & 1))
			continue;
		loaded_slot[c] = 0;
		__atomic_fetch_and(&tlb_space_cpus[slot], ~(1u << c), __ATOMIC_RELAXED);
		__atomic_fetch_or(&tlb_space_cpus[0], 1u << c, __ATOMIC_RELAXED);
	}
}

void tlb_batch_begin(void) { batch[arch_cpu_id()].open = true; }

void tlb_batch_sync(void)
{
	struct tlb_batch *b = &batch[arch_cpu_id()];
	if (b->open && b->n)
		batch_flush(b);
}

void tlb_batch_end(void)
{
	struct tlb_batch *b = &batch[arch_cpu_id()];
	if (!b->open)
		return;
	batch_flush(b);
	b->open = false;
}
