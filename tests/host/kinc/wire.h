// io_priv.h's <wire.h> for test files (see io.h here).
#include "../../../lib/include/wire.h"
