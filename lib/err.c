#include <err.h>

static const char *const names[E_NERR] = {
	[0] = "OK", [E_INVAL] = "E_INVAL", [E_FAULT] = "E_FAULT",
	[E_NOMEM] = "E_NOMEM", [E_NOENT] = "E_NOENT", [E_SRCH] = "E_SRCH",
	[E_CHILD] = "E_CHILD", [E_NOSYS] = "E_NOSYS", [E_BADID] = "E_BADID",
	[E_NOTOWNER] = "E_NOTOWNER", [E_ALIGN] = "E_ALIGN", [E_RANGE] = "E_RANGE",
	[E_OVERLAP] = "E_OVERLAP", [E_BUSY] = "E_BUSY", [E_NOTBACKED] = "E_NOTBACKED",
	[E_IO] = "E_IO", [E_NODEV] = "E_NODEV", [E_TIMEOUT] = "E_TIMEOUT",
	[E_2BIG] = "E_2BIG", [E_EXIST] = "E_EXIST", [E_AGAIN] = "E_AGAIN",
	[E_LINK] = "E_LINK", [E_LIMIT] = "E_LIMIT", [E_GAP] = "E_GAP",
};

const char *err_name(long e)
{
	if (e < 0)
		e = -e;
	return e < E_NERR ? names[e] : "E_?";
}
