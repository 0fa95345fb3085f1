// pcprof: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) that counts
// the guest instructions each translation block executes, by the block's
// start address: tools/bench/relay_profile.py maps them to the kernel's
// functions (where the relay node's instructions go).
//
// Output, at QEMU's exit, to the file named by out=PATH
// (-plugin pcprof.so,out=PATH): one line per block that ran,
//   VADDR_HEX INSNS EXECUTIONS
// (a block that was translated again with other contents is its own line).
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef uint64_t qemu_plugin_id_t;
typedef struct { const char *target_name; struct { int min, cur; } version; bool system_emulation;
	union { struct { int smp_vcpus, max_vcpus; } system; }; } qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;
struct ent { uint64_t va, n, execs; struct ent *next; };
#define H 65536
static struct ent *tab[H];
static FILE *out;
static volatile uint64_t enabled = 1;
static void on_tb(unsigned int vcpu, void *u) { (void)vcpu; ((struct ent *)u)->execs++; }
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	uint64_t va = qemu_plugin_tb_vaddr(tb), n = qemu_plugin_tb_n_insns(tb);
	unsigned h = (unsigned)((va >> 2) ^ (va >> 18)) % H;
	struct ent *e;
	for (e = tab[h]; e; e = e->next)
		if (e->va == va && e->n == n)
			break;
	if (!e) {
		e = calloc(1, sizeof *e);
		e->va = va, e->n = n, e->next = tab[h], tab[h] = e;
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, e);
}
static void on_exit_(qemu_plugin_id_t id, void *u)
{
	(void)id, (void)u;
	for (int h = 0; h < H; h++)
		for (struct ent *e = tab[h]; e; e = e->next)
			if (e->execs)
				fprintf(out, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", e->va, e->n, e->execs);
	fclose(out);
}
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	const char *path = "/tmp/pcprof.out";
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	out = fopen(path, "w");
	if (!out)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
	return 0;
}
