// System-call pointer checks: every bad pointer gets -E_FAULT and changes
// nothing; the kernel is never made to touch memory the caller cannot.
#include <utest.h>

static const char rodata_buf[16] = "read-only";
static char data_buf[64];

int main(void)
{
	const uint64_t unmapped = 0x7ff000000000ull;
	const uint64_t kernel = 0x100000; // kernel image: mapped, supervisor-only
	CHECK_EQ("write NULL", write(0, 5), -E_FAULT);
	CHECK_EQ("write kernel address", write((void *)kernel, 16), -E_FAULT);
	CHECK_EQ("write unmapped", write((void *)unmapped, 4), -E_FAULT);
	CHECK_EQ("write non-canonical", write((void *)0x8000000000000000ull, 4), -E_FAULT);
	CHECK_EQ("write wrapping range", write(data_buf, ~0ul), -E_2BIG);
	CHECK_EQ("write zero bytes of NULL", write(0, 0), 0);
	// A range that starts mapped and runs into unmapped memory.
	CHECK_EQ("write crossing into unmapped", write((void *)(0x7fff00000000ull - 16), 64), -E_FAULT);
	CHECK_EQ("write valid", write("", 0), 0);
	CHECK_EQ("sysinfo into read-only data", sysinfo((struct sysinfo *)rodata_buf), -E_FAULT);
	CHECK("read-only data unchanged", !strcmp(rodata_buf, "read-only"));
	CHECK_EQ("sysinfo into kernel", sysinfo((struct sysinfo *)kernel), -E_FAULT);
	CHECK_EQ("sysinfo NULL", sysinfo(0), -E_FAULT);
	CHECK_EQ("spawn name NULL", spawn(0, "", 3), -E_FAULT);
	CHECK_EQ("spawn name kernel", spawn((const char *)kernel, "", 3), -E_FAULT);
	CHECK_EQ("spawn args unmapped", spawn("hello", (const char *)unmapped, 3), -E_FAULT);
	memset(data_buf, 'a', sizeof(data_buf));
	CHECK_EQ("spawn name without NUL", spawn(data_buf, "", 3), -E_2BIG);
	long pid = spawn("hello", "", 3);
	CHECK_EQ("wait status into read-only", wait(pid, (int *)rodata_buf), -E_FAULT);
	int st;
	CHECK_EQ("child still reapable", wait(pid, &st), pid);
	long r;
	__asm__ volatile("mov $9999, %%eax; syscall" : "=a"(r) : : "rcx", "r11", "memory");
	CHECK_EQ("unknown system call", r, -E_NOSYS);
	return utest_done("ptr_test");
}
