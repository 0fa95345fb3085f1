// io_priv.h's <io.h> for test files, which see the C library's headers
// in angle brackets (a -I lib/include would shadow its string.h).
#include "../../../lib/include/io.h"
