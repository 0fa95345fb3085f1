# Host unit tests: the kernel's logic files compiled for Linux with ASan and
# UBSan, linked with a fake arch layer (tests/host/fake_arch.c) and the CUnit
# suites into one binary, $(BUILD)/host/unit. `make test-host` builds and runs
# it; any failed assertion, sanitizer report or unexpected panic fails it.

# VERBOSE=1 lists every test.

HOST_CC ?= gcc
HOST_DIR := $(BUILD)/host
HOST_BIN := $(HOST_DIR)/unit

# The files under test, exactly as the kernel build compiles them.
# The process manager (context switches) and the ATA driver (port I/O) are
# not among them: fake_proc.c and fake_ata.c stand in. The I/O manager is,
# over fake NICs behind the netdev seam (fake_netdev.c).
HOST_KSRC := kernel/res/pmem.c kernel/res/vspace.c kernel/res/vregion.c \
	kernel/res/vuspace.c kernel/res/res.c kernel/res/io.c kernel/res/io_slot.c kernel/klimit.c \
	kernel/net/demux.c kernel/net/txbatch.c kernel/net/plain.c kernel/net/stripe.c \
	kernel/net/reliable.c kernel/net/reliable_ack.c kernel/net/reliable_call.c \
	kernel/net/relay.c kernel/net/route.c kernel/net/balance.c kernel/net/transport.c kernel/net/worker.c \
	kernel/net/netdev.c kernel/net/shaper.c kernel/uaccess.c kernel/elf.c kernel/cmdline.c kernel/blkdev.c \
	kernel/sched.c kernel/lock.c kernel/res/tlb.c kernel/heap.c kernel/bootinfo.c kernel/fbcon.c lib/fmt.c lib/err.c lib/string.c lib/stats.c \
	drivers/net/e1000e/e1000e_desc.c lib/fsproto.c lib/fsdisk.c \
	kernel/dma.c drivers/net/netpkt.c drivers/net/virtio/virtqueue.c drivers/net/virtio/virtio_net_ring.c
HOST_TSRC := $(wildcard tests/host/*.c)
HOST_OBJ := $(HOST_KSRC:%.c=$(HOST_DIR)/%.o) $(HOST_TSRC:%.c=$(HOST_DIR)/%.o)

HOST_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# -pthread: the lock suite runs fake CPUs as threads.
HOST_CFLAGS := -std=gnu11 -g -O1 -pthread $(HOST_SAN) -Wall -Wextra -MMD -MP
# Kernel files get the kernel's include structure: lib/include's string.h,
# err.h, fmt.h and sys.h shadow the C library's, as in the freestanding build.
# They then call glibc's mem*/str* (ASan checks those); only strlcpy, which
# glibc 2.36 lacks, comes from lib/string.c, whose other functions are
# renamed lib_* so they neither clash with libc nor go untested.
HOST_KFLAGS := $(HOST_CFLAGS) -Ilib/include -Ilib -Ikernel
HOST_LIBSTR_RENAME := $(foreach f,memcpy memmove memset memcmp strlen strnlen strcmp strncmp strchr,-D$(f)=lib_$(f))
# Test files use the C library's headers; kernel and lib headers by quotes.
# Kernel headers' <io.h> and <wire.h> (io_priv.h) come from tests/host/kinc,
# which holds only those two.
HOST_TFLAGS := $(HOST_CFLAGS) -Werror -iquote kernel -iquote lib/include -iquote tests/host \
	-Itests/host/kinc
# res.c's table names io_ops: the link points it at fake_proc.c's spy,
# which records each release and calls io.c's own (__real_io_ops).
HOST_LDFLAGS := -Wl,--wrap=io_ops

.PHONY: test-host host-deps

host-deps:
	@tools/deps.sh cunit

test-host: $(HOST_BIN)
	@echo '  RUN  $(HOST_BIN)'
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 $(HOST_BIN)

$(HOST_BIN): $(HOST_OBJ)
	@echo '  HOSTLD $@'
	@$(HOST_CC) -pthread $(HOST_SAN) $(HOST_LDFLAGS) -o $@ $(HOST_OBJ) -lcunit

$(HOST_DIR)/lib/string.o: HOST_KFLAGS += $(HOST_LIBSTR_RENAME)

$(HOST_DIR)/kernel/%.o $(HOST_DIR)/lib/%.o $(HOST_DIR)/drivers/%.o: HOST_FLAGS = $(HOST_KFLAGS)
$(HOST_DIR)/tests/host/%.o: HOST_FLAGS = $(HOST_TFLAGS)

$(HOST_DIR)/%.o: %.c tests/host/host.mk | host-deps
	@mkdir -p $(dir $@)
	@echo '  HOSTCC $<'
	@$(HOST_CC) $(HOST_FLAGS) -c $< -o $@
