#!/usr/bin/env bash
# Benchmarks brig against crun and runc on this machine, all on the same
# busybox bundle, in one run, alternating between them, and against the
# kernel floor (tests/bench/floor.c, built twice: as any small C program,
# dynamically linked, and as a static PIE the way brig is). `make bench`
# runs it on the host and in the test VM (tests/bench/bench.sh).
#
#   tests/bench/run.sh [RESULT.json]
#
# Environment: BENCH_BPFFS=0 (don't mount bpffs where it is missing),
# BRIG CRUN RUNC (the binaries; a runtime that cannot run a
# container here is left out, with the reason), BENCH_BIN (where bench-timeit
# and the bench-floor programs are), BENCH_ITERATIONS (200: run, create/start/delete and
# exec), BENCH_CONCURRENT (100 containers started at once), BENCH_LABEL (a
# name for this machine in the report). Prints a table and writes the figures
# as JSON to RESULT.json (default bench-result.json).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
CRUN=${CRUN:-crun}
RUNC=${RUNC:-runc}
BENCH_BIN=${BENCH_BIN:-$top/tests/bench}
N=${BENCH_ITERATIONS:-200}
C=${BENCH_CONCURRENT:-100}
LABEL=${BENCH_LABEL:-$(hostname)}
result=${1:-bench-result.json}
timeit=$BENCH_BIN/bench-timeit
floor=$BENCH_BIN/bench-floor
floor_static=$BENCH_BIN/bench-floor-static

die() {
	echo "bench: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "the benchmarks create containers and must run as root"
for tool in jq /bin/busybox "$timeit" "$floor" "$floor_static" "$BRIG"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make bench builds the tools; jq and busybox-static come from Debian)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/brig-bench.XXXXXX")
log=$work/errors.log
# State roots where every runtime keeps them by default: on the tmpfs of
# /run (/run/brig, /run/crun, /run/runc). On a disk file system, creating
# and removing state files costs each runtime several tenths of a
# millisecond of journal work that no real deployment pays.
# Where /run is not a tmpfs, the benchmark mounts one of its own.
states=$work/state
mkdir -p "$states"
if [ "$(stat -f -c %T /run 2>/dev/null)" = tmpfs ]; then
	states=$(mktemp -d /run/brig-bench.XXXXXX)
else
	mount -t tmpfs -o mode=0700 brig-bench-state "$states" || die "cannot mount a tmpfs for the state roots"
fi
# bpffs at /sys/fs/bpf, where systemd mounts it on every boot of a Debian
# 12 machine: brig pins its device programs there once per host instead of
# having each container's verified again. Where the machine has none (a
# host without systemd), the benchmark mounts one for its run and takes
# it away after, so the figures are those of an ordinary host.
bpffs_mounted=
if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != bpf_fs ] && [ "${BENCH_BPFFS:-1}" != 0 ] &&
	mkdir -p /sys/fs/bpf 2>/dev/null && mount -t bpf bpf /sys/fs/bpf 2>/dev/null; then
	bpffs_mounted=1
fi
cleanup() {
	local r id
	for r in "${runtimes[@]}"; do
		[ "$r" = floor ] && continue
		for id in $("${bin[$r]}" --root "$states/root-$r" list -q 2>/dev/null); do
			"${bin[$r]}" --root "$states/root-$r" delete -f "$id" >/dev/null 2>&1 || true
		done
	done
	for id in $(ls "$work/sandboxes" 2>/dev/null); do
		BRIG_SANDBOX_DIR=$work/sandboxes "$BRIG" --root "$states/root-sandbox" sandbox rm "$id" \
			>/dev/null 2>&1 || true
	done
	umount "$work/ro" 2>/dev/null || true
	[ -z "$bpffs_mounted" ] || umount /sys/fs/bpf 2>/dev/null || true
	if [ "$states" = "$work/state" ]; then
		umount "$states" 2>/dev/null || true
	else
		rm -rf "$states"
	fi
	rm -rf "$work"
}
declare -a runtimes=()
declare -A bin=()
trap cleanup EXIT

# The cgroup v2 mount, where bench-floor makes its cgroups as brig does.
cgroup2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$cgroup2" ] || die "no cgroup2 mount on this machine"

# ------------------------------------------------------------- bundles ----

mkdir -p "$work/rootfs"/{bin,dev,proc,sys,tmp,etc}
cp /bin/busybox "$work/rootfs/bin/busybox"
for applet in true sh sleep; do
	ln -s busybox "$work/rootfs/bin/$applet"
done
# When the machine's cgroup v2 has the pids controller, each container gets
# a limit, so every runtime writes to a controller file as well.
resources='{}'
if grep -qw pids "$cgroup2/cgroup.subtree_control" 2>/dev/null; then
	resources='{"pids": {"limit": 1000}}'
fi
# brig's default spec, with a version every runtime of the comparison reads.
(cd "$work" && "$BRIG" spec)
make_bundle() { # NAME ARGS-JSON
	mkdir -p "$work/$1"
	jq --argjson args "$2" --argjson res "$resources" --arg rootfs "$work/rootfs" \
		'.ociVersion = "1.0.2" | .root.path = $rootfs
		 | .process.terminal = false | .process.args = $args
		 | .linux.resources = (.linux.resources // {}) + $res' \
		"$work/config.json" >"$work/$1/config.json"
}
make_bundle true '["/bin/true"]'
make_bundle sleep '["/bin/sleep", "1000000"]'

# ------------------------------------------------------------ runtimes ----

skipped=""
add_runtime() { # NAME BINARY
	local path
	path=$(command -v "$2" 2>/dev/null) || {
		skipped="$skipped$1: not installed; "
		return 0
	}
	mkdir -p "$states/root-$1"
	if ! "$path" --root "$states/root-$1" run --bundle "$work/true" "probe-$1" >/dev/null 2>"$work/probe-$1.err"; then
		skipped="$skipped$1: $(tail -1 "$work/probe-$1.err"); "
		"$path" --root "$states/root-$1" delete -f "probe-$1" >/dev/null 2>&1 || true
		return 0
	fi
	runtimes+=("$1")
	bin[$1]=$path
}
add_runtime brig "$BRIG"
# brig-ro: the same binary on a read-only mount, where it needn't move onto
# a read-only clone of its file first (libcontainer/selfexe/selfexe.c); how brig
# runs when installed on a read-only /usr. BENCH_RO=0 leaves it out.
if [ "${BENCH_RO:-1}" != 0 ]; then
	mkdir -p "$work/ro"
	cp "$BRIG" "$work/ro/brig"
	mount --bind "$work/ro" "$work/ro" && mount -o remount,bind,ro "$work/ro" &&
		add_runtime brig-ro "$work/ro/brig"
fi
add_runtime crun "$CRUN"
add_runtime runc "$RUNC"
case " ${runtimes[*]} " in *" brig "*) ;; *) die "brig cannot run a container here: $skipped" ;; esac
skipped=${skipped%; }
[ -z "$skipped" ] || echo "# left out: $skipped"

# rotated (lib.sh) orders the runtimes of each round.

# measure FILE COMMAND...: one timed run, appended to FILE as "NS KB".
measure() {
	local file=$1
	shift
	"$timeit" -l "$log" -- "$@" >>"$work/$file" || die "$* failed: $(tail -3 "$log")"
}

# wait_gone PID: until PID has exited (a zombie counts as gone).
wait_gone() {
	local stat
	while read -r stat 2>/dev/null <"/proc/$1/stat"; do
		stat=${stat##*) }
		[ "${stat%% *}" = Z ] && return 0
	done
	return 0
}

rt() { # NAME ARGS...: runs the runtime NAME with its own state root
	local name=$1
	shift
	"${bin[$name]}" --root "$states/root-$name" "$@"
}

# measure_rt FILE NAME ARGS...: measure of the runtime NAME.
measure_rt() {
	local file=$1 name=$2
	shift 2
	measure "$file" "${bin[$name]}" --root "$states/root-$name" "$@"
}

# ---------------------------------------------------------- benchmarks ----

echo "# $LABEL: ${runtimes[*]} and the kernel floor; $N iterations, $C concurrent containers"

# 1 and 6: run of /bin/true, and the kernel doing the same work by itself.
for ((i = 0; i < N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}" floor floor-static); do
		if [ "$r" = floor ]; then
			measure run.floor "$floor" run "$cgroup2" "$work/rootfs"
		elif [ "$r" = floor-static ]; then
			measure run.floor-static "$floor_static" run "$cgroup2" "$work/rootfs"
		else
			measure_rt "run.$r" "$r" run --bundle "$work/true" "run-$r-$i"
		fi
	done
done

# 2: create, start and delete, each timed by itself.
for ((i = 0; i < N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}"); do
		measure_rt "create.$r" "$r" create --bundle "$work/true" --pid-file "$work/pid" "lc-$r-$i"
		measure_rt "start.$r" "$r" start "lc-$r-$i"
		wait_gone "$(cat "$work/pid")"
		measure_rt "delete.$r" "$r" delete "lc-$r-$i"
	done
done

# 3: exec of /bin/true into a running container (the floor: setns + fork).
declare -A target=()
for r in "${runtimes[@]}"; do
	rt "$r" run -d --bundle "$work/sleep" --pid-file "$work/pid-$r" "exec-$r" \
		</dev/null >/dev/null 2>>"$log" || die "$r: cannot start the exec target: $(tail -3 "$log")"
	target[$r]=$(cat "$work/pid-$r")
done
for ((i = 0; i < N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}" floor floor-static); do
		if [ "$r" = floor ]; then
			measure exec.floor "$floor" exec "$cgroup2" "${target[brig]}"
		elif [ "$r" = floor-static ]; then
			measure exec.floor-static "$floor_static" exec "$cgroup2" "${target[brig]}"
		else
			measure_rt "exec.$r" "$r" exec "exec-$r" /bin/true
		fi
	done
done
for r in "${runtimes[@]}"; do
	rt "$r" delete -f "exec-$r" >/dev/null 2>>"$log" || true
done

# 5: C containers started at once; wall time until every one is running.
for r in "${runtimes[@]}"; do
	# bench-timeit under bench-timeit: the outer one records the inner one's
	# wall time (plus one fork and exec) and the largest runtime's RSS.
	measure "concurrent.$r" "$timeit" -l "$log" -p "$C" -- \
		"${bin[$r]}" --root "$states/root-$r" run -d --bundle "$work/sleep" "many-$r-%d"
	for ((k = 0; k < C; k++)); do
		rt "$r" delete -f "many-$r-$k" >/dev/null 2>>"$log" &
	done
	wait
done

# 7: a sandbox's create (`brig sandbox create`: the tree, brig-init, the
# data image, limits, started), with its own user namespace (an id range,
# a user namespace to carry the map, the id-mapped tree) and without
# (--userns host), alternating; each removed untimed. Needs the sandbox
# tree; where the tree can't be id-mapped (the VM's 9p root), said and
# left out.
sb_tree=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
SB_N=${BENCH_SANDBOX_ITERATIONS:-$((N / 4 > 10 ? N / 4 : 10))}
sb() { BRIG_SANDBOX_DIR=$work/sandboxes "$BRIG" --root "$states/root-sandbox" sandbox "$@"; }
sb_create() { # MODE ID
	measure "sandbox_create.$1" env BRIG_SANDBOX_DIR="$work/sandboxes" "$BRIG" \
		--root "$states/root-sandbox" sandbox create --userns "$1" --rootfs "$sb_tree" \
		--data-size 16M --memory 256M --pids 64 "$2"
	sb rm "$2" >/dev/null 2>>"$log"
}
# The sandbox's root must reach its home: the work dir is 0700.
chmod 0711 "$work"
if [ ! -d "$sb_tree/usr/bin" ]; then
	echo "# sandbox create: left out (no sandbox tree at $sb_tree: make rootfs)"
elif ! sb create --rootfs "$sb_tree" --data-size 16M sb-probe >/dev/null 2>>"$log"; then
	echo "# sandbox create: left out ($(tail -1 "$log"))"
else
	sb rm sb-probe >/dev/null 2>>"$log"
	for ((i = 0; i < SB_N; i++)); do
		for m in $(rotated "$i" auto host); do
			sb_create "$m" "sb-$m-$i"
		done
	done
fi

# ------------------------------------------------------------- report -----

# stats FILE: "median p10 p90 n" of the times in ms, and the median KB.
stats() {
	local kb
	kb=$(sort -n -k2,2 "$work/$1" | awk '{ k[NR] = $2 } END { print k[int((NR + 1) / 2)] }')
	sort -n -k1,1 "$work/$1" | awk -v kb="$kb" '
		{ t[NR] = $1 / 1e6 }
		function pct(p,  k) { k = int(p * (NR - 1) + 0.5) + 1; return t[k] }
		END { printf "%.3f %.3f %.3f %d %d\n", pct(0.5), pct(0.1), pct(0.9), NR, kb }'
}

json_bench() { # BENCH NAMES...: a JSON object for one benchmark
	local bench=$1
	shift
	local r
	for r in "$@"; do
		[ -s "$work/$bench.$r" ] || continue
		read -r med p10 p90 n kb < <(stats "$bench.$r")
		jq -n --arg r "$r" --argjson med "$med" --argjson p10 "$p10" --argjson p90 "$p90" \
			--argjson n "$n" --argjson kb "$kb" \
			'{($r): {median_ms: $med, p10_ms: $p10, p90_ms: $p90, n: $n, peak_rss_kb: $kb}}'
	done | jq -s --arg b "$bench" 'add as $v | if $v == null then {} else {($b): $v} end'
}

# A benchmark that no runtime ran (the VM's sandbox create where its root
# cannot be id-mapped, say) is left out of the JSON, not written as null.
{
	json_bench run "${runtimes[@]}" floor floor-static
	json_bench create "${runtimes[@]}"
	json_bench start "${runtimes[@]}"
	json_bench delete "${runtimes[@]}"
	json_bench exec "${runtimes[@]}" floor floor-static
	json_bench concurrent "${runtimes[@]}"
	json_bench sandbox_create auto host
} | jq -s --arg machine "$LABEL" --arg kernel "$(uname -r)" --arg date "$(date -u +%Y-%m-%dT%H:%MZ)" \
	--argjson n "$N" --argjson c "$C" --arg skipped "$skipped" \
	--arg statefs "$(stat -f -c %T "$states")" --arg bpffs "$(stat -f -c %T /sys/fs/bpf 2>/dev/null || echo none)" '
	add as $b
	| def ratio_of($r; $x; $y): if $b[$x] and $b[$x][$r] and $b[$x][$y]
		then ($b[$x][$r].median_ms / $b[$x][$y].median_ms * 1000 | round / 1000) else null end;
	def ratio($x; $y): ratio_of("brig"; $x; $y);
	{"label": $machine, "date": $date, "kernel": $kernel, "iterations": $n, "concurrent": $c,
	 "left_out": $skipped, "state_fs": $statefs, "bpffs": ($bpffs == "bpf_fs"), "benchmarks": $b,
	 ratios: ($b | keys | map({(.): {"brig/crun": ratio(.; "crun"), "brig/runc": ratio(.; "runc"),
	                                 "brig/floor": ratio(.; "floor"),
	                                 "brig-ro/floor": ratio_of("brig-ro"; .; "floor"),
	                                 "brig/floor-static": ratio(.; "floor-static"),
	                                 "brig-ro/floor-static": ratio_of("brig-ro"; .; "floor-static"),
	                                 "userns/host": ratio_of("auto"; .; "host")}}) | add)}' >"$result"

jq -r '"# \(.label) (kernel \(.kernel), \(.date)): median [p10-p90] ms, median peak RSS"' "$result"
jq -r '"# state roots on \(.state_fs); bpffs on /sys/fs/bpf (brig caches its device programs there): \(.bpffs)"' "$result"
jq -r '.benchmarks | to_entries[] | .key as $b | .value | to_entries[]
	| "\($b)\t\(.key)\t\(.value.median_ms)\t[\(.value.p10_ms)-\(.value.p90_ms)]\t\(.value.peak_rss_kb) KB"' "$result" |
	column -t -s "$(printf '\t')"
# The ratios apart, so that their long lines don't widen the figures' columns.
jq -r '.ratios | to_entries[] | "\(.key)\tratios  "
	+ (.value | to_entries | map(select(.value != null) | "\(.key) \(.value)") | join("  "))' "$result" |
	column -t -s "$(printf '\t')"
echo "# written to $result"
