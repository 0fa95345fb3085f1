#!/bin/bash
# R1 as receive work, two kernels alternating (kernel only: no Linux, no
# DPDK): ROUNDS rounds, each NIC, each kernel one r1.py boot pair.
#   bench/results/r1-explore/scrub-ab/r1ab.sh OLD.elf NEW.elf LB_BUILD OUTDIR [ROUNDS]
# writes OUTDIR/{old,new}-NIC-ROUND.json (r1.py's format). Run from the
# repository root.
set -euo pipefail
old=$1 new=$2 guest=$3 out=$4 rounds=${5:-4}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
	for nic in virtio e1000; do
		for k in old new; do
			kern=$old
			[ "$k" = new ] && kern=$new
			python3 tools/bench/r1.py --kernel "$kern" --guest "$guest" --nic "$nic" --sizes 64,1500,8192 \
				--pairs 1 --variants '' --no-dpdk --out "$out/$k-$nic-$round.json"
		done
	done
done
