#!/usr/bin/env bash
# The systemd cgroup driver's cost, side by side in one run, in the test VM
# booted with systemd (it needs systemd as PID 1):
#   tests/vm/run.sh --systemd tests/bench/systemd.sh [RESULT.json]
# `run` of /bin/true with a memory and pids limit, BENCH_SYSTEMD_RUNS (20)
# times each, alternating: brig and runc, each with cgroupfs and with
# --systemd-cgroup. Medians in ms, and the ratios brig/runc and
# systemd/cgroupfs. Under the VM's emulation every process start is slow:
# read the ratios, not the milliseconds.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
RUNC=${RUNC:-/usr/sbin/runc}
RUNS=${BENCH_SYSTEMD_RUNS:-20}
result=${1:-systemd-result.json}

[ "$(cat /proc/1/comm)" = systemd ] || {
	echo "bench systemd: needs systemd as PID 1 (tests/vm/run.sh --systemd)" >&2
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/brig-bench-sd.XXXXXX")
trap 'rm -rf "$work"' EXIT
# two bundles: a cgroupfs path and a systemd one, each reused run after run
for kind in fs sd; do
	mkdir -p "$work/$kind/rootfs/bin"
	cp /bin/busybox "$work/$kind/rootfs/bin/"
	ln -s busybox "$work/$kind/rootfs/bin/true"
	(cd "$work/$kind" && "$BRIG" spec)
	path=/bench-fs
	[ "$kind" = sd ] && path=system.slice:bench:sd
	jq --arg p "$path" '.process.terminal = false | .process.args = ["true"] | .linux.cgroupsPath = $p
		| .linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 64}' \
		"$work/$kind/config.json" >"$work/c" && mv "$work/c" "$work/$kind/config.json"
done

# one NAME BIN KIND [FLAG]: one run's wall time in microseconds, appended
# to $work/NAME.times
one() {
	local name=$1 bin=$2 kind=$3 t0 t1
	shift 3
	t0=$(date +%s%N)
	"$bin" --root "$work/state-$name" "$@" run -b "$work/$kind" "c-$name" >/dev/null </dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$work/$name.times"
}

median() {
	sort -n "$work/$1.times" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000 }'
}

for _ in $(seq "$RUNS"); do
	one brig-fs "$BRIG" fs
	one brig-sd "$BRIG" sd --systemd-cgroup
	one runc-fs "$RUNC" fs
	one runc-sd "$RUNC" sd --systemd-cgroup
done
bf=$(median brig-fs) bs=$(median brig-sd) rf=$(median runc-fs) rs=$(median runc-sd)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '%-28s %10s %10s %8s\n' "run /bin/true, median ms" brig runc brig/runc
printf '%-28s %10s %10s %8s\n' cgroupfs "$bf" "$rf" "$(ratio "$bf" "$rf")"
printf '%-28s %10s %10s %8s\n' --systemd-cgroup "$bs" "$rs" "$(ratio "$bs" "$rs")"
printf '%-28s %10s %10s\n' "systemd/cgroupfs" "$(ratio "$bs" "$bf")" "$(ratio "$rs" "$rf")"
jq -n --argjson runs "$RUNS" --argjson bf "$bf" --argjson bs "$bs" --argjson rf "$rf" --argjson rs "$rs" \
	'{runs: $runs, median_ms: {brig_cgroupfs: $bf, brig_systemd: $bs, runc_cgroupfs: $rf, runc_systemd: $rs},
	  ratio: {brig_over_runc_cgroupfs: ($bf / $rf), brig_over_runc_systemd: ($bs / $rs)}}' >"$result"
echo "bench systemd: $result"
