#!/bin/bash
# containerd-shim-brig-v2 against Debian's containerd-shim-runc-v2, side by
# side under one private containerd:
#   - the shim's memory per running container: the Pss (and Rss) of every
#     shim process, summed, over N containers each running `sleep`;
#   - the wall time of `ctr run --rm IMAGE true`, the mean of R runs each.
# Prints the numbers and brig/runc ratios (lower is better); asserts nothing.
#
#   tests/bench/shim-memory.sh [N (default 5)] [R (default 10)]
#
# Needs root, containerd and runc (scripts/install-deps.sh) and cgroup v2:
# on a hybrid host run it in the test VM, e.g.
#   tests/vm/run.sh -e SHIM_DIR=$PWD tests/bench/shim-memory.sh
# SHIM_DIR: the directory holding containerd-shim-brig-v2 (default: the
# current one).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
N=${1:-5}
R=${2:-10}
SHIM_DIR=${SHIM_DIR:-$PWD}
export SHIM_DIR

die() {
	echo "shim-memory: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "must run as root"
[ -x "$SHIM_DIR/containerd-shim-brig-v2" ] || die "no containerd-shim-brig-v2 in $SHIM_DIR (set SHIM_DIR)"
command -v containerd-shim-runc-v2 >/dev/null || die "containerd-shim-runc-v2 is missing (apt-get install containerd)"
command -v runc >/dev/null || die "runc is missing (apt-get install runc)"

# containerd-helpers.bash calls helpers of the bats suite (busybox_applets,
# stop_file_proxies), whose file asks bats for its version as it loads.
bats_require_minimum_version() { :; }
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
# shellcheck source=tests/integration/helpers.bash
. "$here/../integration/helpers.bash"
# shellcheck source=tests/integration/containerd-helpers.bash
. "$here/../integration/containerd-helpers.bash"

CTRD_DIR=$(mktemp -d /run/brig-shimbench.XXXXXX)
cleanup() {
	containerd_stop
	rm -rf "$CTRD_DIR"
}
trap cleanup EXIT
containerd_start "$CTRD_DIR" || die "containerd did not start"
containerd_import_busybox || die "the busybox image could not be imported"

# shim_memory BINARY: "PSS_KIB RSS_KIB" summed over its running processes.
shim_memory() {
	local pid pss=0 rss=0 p r
	# By argv[0]: pgrep -x can't match names past 15 characters, and brig's
	# shim runs from a detached read-only clone of its file, whose
	# /proc/PID/exe names no path on the host (libcontainer/selfexe/selfexe.c).
	for pid in $(for c in /proc/[0-9]*/cmdline; do
		[ "$(basename "$(tr '\0' '\n' <"$c" 2>/dev/null | head -1)")" = "$1" ] && basename "$(dirname "$c")"
	done); do
		p=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
		r=$(awk '/^Rss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
		pss=$((pss + ${p:-0}))
		rss=$((rss + ${r:-0}))
	done
	echo "$pss $rss"
}

# memory_per_container NAME RUNTIME BINARY: N containers running `sleep`,
# then the shims' memory divided by N.
memory_per_container() {
	local name=$1 runtime=$2 binary=$3 i pss rss
	for i in $(seq 1 "$N"); do
		ctrd run -d --runtime "$runtime" "$CTRD_IMAGE" "$name-$i" sleep 100000 >/dev/null
	done
	for i in $(seq 1 "$N"); do
		wait_for_status "$name-$i" RUNNING
	done
	sleep 1 # let the shims settle after their start-up
	read -r pss rss < <(shim_memory "$binary")
	for i in $(seq 1 "$N"); do
		ctrd task kill -s KILL "$name-$i" >/dev/null 2>&1 || true
	done
	for i in $(seq 1 "$N"); do
		wait_for_status "$name-$i" STOPPED >/dev/null 2>&1 || true
		ctrd task delete "$name-$i" >/dev/null 2>&1 || true
		ctrd container rm "$name-$i" >/dev/null 2>&1 || true
	done
	echo "$((pss / N)) $((rss / N))"
}

now_ns() {
	date +%s%N
}

# run_time_ms NAME RUNTIME: the mean wall time of `ctr run --rm IMAGE true`.
run_time_ms() {
	local name=$1 runtime=$2 i t0 total=0
	ctrd run --rm --runtime "$runtime" "$CTRD_IMAGE" "$name-warm" true # caches, page-ins
	for i in $(seq 1 "$R"); do
		t0=$(now_ns)
		ctrd run --rm --runtime "$runtime" "$CTRD_IMAGE" "$name-t$i" true
		total=$((total + $(now_ns) - t0))
	done
	echo $((total / R / 1000000))
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'
}

read -r brig_pss brig_rss < <(memory_per_container brig io.containerd.brig.v2 containerd-shim-brig-v2)
read -r runc_pss runc_rss < <(memory_per_container runc io.containerd.runc.v2 containerd-shim-runc-v2)
brig_ms=$(run_time_ms brig io.containerd.brig.v2)
runc_ms=$(run_time_ms runc io.containerd.runc.v2)

echo "shim memory per running container ($N containers), Pss: brig $brig_pss KiB, runc $runc_pss KiB, ratio $(ratio "$brig_pss" "$runc_pss")"
echo "shim memory per running container ($N containers), Rss: brig $brig_rss KiB, runc $runc_rss KiB, ratio $(ratio "$brig_rss" "$runc_rss")"
echo "ctr run --rm IMAGE true (mean of $R): brig $brig_ms ms, runc $runc_ms ms, ratio $(ratio "$brig_ms" "$runc_ms")"
