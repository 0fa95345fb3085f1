#!/usr/bin/env bash
# build-relay.sh [GUEST]: the relay benchmark's guest, laid over the
# baseline guest (build.sh) in GUEST (default build/linux-baseline):
#   GUEST/relay/relaybench       relaybench.c, static (also run on the host: --selfcheck)
#   GUEST/relay/initrd-relay.gz  initrd.gz followed by a second archive with
#                                /relay-init (relay-init.sh) and /bin/relaybench;
#                                the kernel unpacks both, and rdinit=/relay-init
#                                runs the relay init instead of /init.
# Rebuilt only when an input changes (hash in GUEST/relay/stamp).
# LB_PREBUILT=1: only check that it is there (no build).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

GUEST=${1:-$ROOT/build/linux-baseline}
if [ -n "${LB_PREBUILT:-}" ]; then
	[ -f "$GUEST/relay/initrd-relay.gz" ] || lb_die "no relay guest in $GUEST: run $HERE/build-relay.sh first"
	exit 0
fi
"$HERE/build.sh" "$GUEST"
GUEST=$(cd "$GUEST" && pwd)
OUT=$GUEST/relay
mkdir -p "$OUT"
lb_lock "$OUT/.build.lock"
hash=$(cat "$HERE/relaybench.c" "$HERE/benchnet.h" "$HERE/relay-init.sh" "$HERE/build-relay.sh" "$ROOT/lib/include/wire.h" \
	"$GUEST/initrd.gz" | sha256sum | cut -d' ' -f1)
if [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$hash" ] && [ -f "$OUT/initrd-relay.gz" ]; then
	lb_log "relay guest up to date"
	exit 0
fi
rm -f "$OUT/stamp"
gcc -std=c11 -static -O2 -Wall -Wextra -Werror -o "$OUT/relaybench" "$HERE/relaybench.c"
"$OUT/relaybench" --selfcheck >/dev/null || lb_die "relaybench --selfcheck failed"
r=$OUT/overlay
rm -rf "$r"
mkdir -p "$r/bin"
install -m 755 "$HERE/relay-init.sh" "$r/relay-init"
install -m 755 "$OUT/relaybench" "$r/bin/relaybench"
strip "$r/bin/relaybench"
(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null) |
	gzip -9n >"$OUT/overlay.gz"
cat "$GUEST/initrd.gz" "$OUT/overlay.gz" >"$OUT/initrd-relay.gz.tmp"
mv "$OUT/initrd-relay.gz.tmp" "$OUT/initrd-relay.gz"
rm -rf "$r" "$OUT/overlay.gz"
echo "$hash" >"$OUT/stamp"
lb_log "relay guest ready: $OUT/initrd-relay.gz"
