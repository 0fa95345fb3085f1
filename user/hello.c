// Prints its pid and arguments: the smallest program, used by the tests to
// show that a program runs after others have faulted.
#include <ulib.h>

int main(int argc, char **argv)
{
	printf("hello from pid %ld:", getpid());
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	return 0;
}
