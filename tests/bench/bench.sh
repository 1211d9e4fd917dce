#!/bin/sh
# `make bench`: tests/bench/run.sh on this host (brig, runc, and crun when it
# can run here), then in the test VM (tests/vm/), a pure cgroup v2 machine
# where all three can. Results go to BENCH_OUT (default ./bench-results) as
# host.json and vm.json. BENCH_ITERATIONS and BENCH_CONCURRENT set the host
# run; BENCH_VM_ITERATIONS (30) and BENCH_VM_CONCURRENT (100) the VM run, where
# each process costs tens of times more. BENCH_VM=0 skips the VM. Then the
# containerd shims in the VM (shim-memory.sh; BENCH_SHIM=0 skips them).
# The egress proxy's throughput and tunnel latency run on the host
# (egress.sh, egress.json; BENCH_EGRESS=0 skips them); so does the sandbox
# API's added latency (api.sh, api.json; BENCH_API=0 skips it).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
out=${BENCH_OUT:-$PWD/bench-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
: "${BRIG:=$top/brig}" "${BENCH_BIN:=$top/tests/bench}"
export BRIG BENCH_BIN top_srcdir="$top"

BENCH_LABEL=host bash "$here/run.sh" "$out/host.json"
# The packages-only network, on the host (the VM has no network):
# tests/bench/egress.sh. BENCH_EGRESS=0 skips it.
if [ "${BENCH_EGRESS:-1}" != 0 ]; then
	echo
	bash "$here/egress.sh" "$out/egress.json"
fi
if [ "${BENCH_API:-1}" != 0 ]; then
	echo
	bash "$here/api.sh" "$out/api.json"
fi
[ "${BENCH_VM:-1}" = 0 ] && exit 0
echo
# The results directory is shared with the VM, and so is the source tree.
"$top/tests/vm/run.sh" --share "$top" --share "$out" \
	-e "BRIG=$BRIG" -e "BENCH_BIN=$BENCH_BIN" -e "top_srcdir=$top" -e BENCH_LABEL=vm \
	-e "BENCH_ITERATIONS=${BENCH_VM_ITERATIONS:-30}" -e "BENCH_CONCURRENT=${BENCH_VM_CONCURRENT:-100}" \
	bash "$here/run.sh" "$out/vm.json"

# The containerd shims, side by side in the VM (tests/bench/shim-memory.sh):
# memory per running container and `ctr run --rm` time. BENCH_SHIM=0 skips.
[ "${BENCH_SHIM:-1}" = 0 ] && exit 0
echo
"$top/tests/vm/run.sh" --share "$top" --share "$out" -e "SHIM_DIR=$(dirname "$BRIG")" \
	bash "$here/shim-memory.sh" "${BENCH_SHIM_CONTAINERS:-5}" "${BENCH_SHIM_RUNS:-10}" |
	tee "$out/shim.txt"
