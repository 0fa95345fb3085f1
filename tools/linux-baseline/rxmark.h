// rxmark.h: insnplugin.c's receive-window markers (R1 as receive work,
// issue 25), no-ops for pktbench and dpdkbench. A window opens while the
// server waits for a burst and closes once it holds the burst's last frame;
// the payload check is counted apart; a poll that found nothing is left
// out: all of it (RX_POLL_EMPTY, a poll with a system call whose work the
// program can see the result of) or its user-mode part (RX_POLL_EMPTY_USER,
// a ring spin, where the guest kernel's interrupts in between are receive
// work). See insnplugin.c for what the plugin counts.
#ifndef RXMARK_H
#define RXMARK_H
#define RX_OPEN() __asm__ volatile("nopl 0x7ab1c0d3(%%rax)" ::: "memory")
#define RX_CLOSE() __asm__ volatile("nopl 0x7ab1c0d4(%%rax)" ::: "memory")
#define RX_CHECK_BEGIN() __asm__ volatile("nopl 0x7ab1c0d5(%%rax)" ::: "memory")
#define RX_CHECK_END() __asm__ volatile("nopl 0x7ab1c0d6(%%rax)" ::: "memory")
#define RX_POLL_BEGIN() __asm__ volatile("nopl 0x7ab1c0d7(%%rax)" ::: "memory")
#define RX_POLL_EMPTY() __asm__ volatile("nopl 0x7ab1c0d8(%%rax)" ::: "memory")
#define RX_POLL_EMPTY_USER() __asm__ volatile("nopl 0x7ab1c0d9(%%rax)" ::: "memory")
// The idle window after the last burst: this long with no frame coming.
#define RX_IDLE_WINDOW_MS 200
#endif
