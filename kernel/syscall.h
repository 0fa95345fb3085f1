#ifndef SYSCALL_H
#define SYSCALL_H
#include <stdint.h>

struct trapframe;
void syscall_dispatch(struct trapframe *tf);
// Number of calls by number, for the fuzzer's accounting.
extern uint64_t syscall_count;
#endif
