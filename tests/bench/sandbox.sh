#!/usr/bin/env bash
# The sandbox, side by side with gVisor (runsc) and runc, in one run on the
# same read-only Debian tree (`make bench-sandbox`; never part of make check).
#
#   tests/bench/sandbox.sh [RESULT.json]
#
# Each runtime gets what a sandbox has: the tree read-only, a writable
# /mnt/data of its own, uid 1000 with no capabilities and no_new_privs,
# memory 512 MiB, 256 pids and 1 CPU, the sandbox's seccomp profile
# (seccomp-profiles/sandbox.json; runsc applies it inside with
# --oci-seccomp) and loopback-only networking. brig's is `brig sandbox
# create` as a user runs it: its own user namespace, brig-init as PID 1, the
# packages-only network with its proxy, the view of its limits (lxcfs),
# jemalloc preloaded, /mnt/data an ext4 image with a quota. runc's and
# runsc's idle process is `sleep infinity`; their /mnt/data is a directory.
# runsc runs with --platform=ptrace, and kvm where it works (the report says
# which ran). The runtimes alternate within every loop, in an order that
# changes from round to round so that each follows each other equally
# often (rotated, lib.sh), and each timed exec and job inside comes right
# after an untimed one of its own runtime.
#
#   ready     create, then the first exec of `python3 -c pass` finished
#   exec      `true` and `python3 -c 'print(1)'` into a running sandbox
#   rm        teardown of a sandbox (after each ready)
#   idle      MemAvailable's drop per idle sandbox over IDLE sandboxes,
#             page caches dropped before each reading: every process a
#             runtime keeps per sandbox counts (brig-init; runsc's sentry and
#             gofer; runc's sleep), and beside it the kernel's accounted
#             memory (slab, stacks, page tables, per-CPU, vmalloc, anon,
#             shmem, buffers), which the host's other tenants move less
#   density   DENSITY sandboxes with their limits created PARALLEL at a time,
#             each then answering an exec of `true`; creation time, rate and
#             memory. A runtime stops early when MemAvailable falls below a
#             quarter of the machine's memory or its time budget is spent;
#             the report says where.
#   work      wall time inside of a syscall-heavy loop (stat, open and close
#             of the tree's Python library), a file-heavy job (untar the
#             library into /mnt/data, read it back) and a CPU-bound Python
#             loop
#
# Environment: BRIG RUNC RUNSC (binaries), BENCH_BIN (bench-timeit),
# BRIG_SANDBOX_ROOTFS (the tree, default /var/lib/brig/rootfs),
# BENCH_SB_READY (100), BENCH_SB_EXEC (100), BENCH_SB_IDLE (50),
# BENCH_SB_DENSITY (1000), BENCH_SB_PARALLEL (2 × CPUs),
# BENCH_SB_BUDGET (seconds of density per runtime, 600), BENCH_SB_WORK (15),
# BENCH_SB_RUNTIMES (which of brig runsc runc to run, all by default).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
RUNC=${RUNC:-runc}
RUNSC=${RUNSC:-runsc}
BENCH_BIN=${BENCH_BIN:-$top/tests/bench}
timeit=$BENCH_BIN/bench-timeit
READY_N=${BENCH_SB_READY:-100}
EXEC_N=${BENCH_SB_EXEC:-100}
IDLE_N=${BENCH_SB_IDLE:-50}
DENSITY_N=${BENCH_SB_DENSITY:-1000}
PARALLEL=${BENCH_SB_PARALLEL:-$((2 * $(nproc)))}
BUDGET=${BENCH_SB_BUDGET:-600}
WORK_N=${BENCH_SB_WORK:-15}
tree=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
result=${1:-bench-sandbox.json}
mkdir -p "$(dirname "$result")"

# Nothing here reads the caller's input: `sandbox exec` would relay it.
exec </dev/null

die() {
	echo "bench sandbox: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "the benchmark creates sandboxes and must run as root"
for tool in jq "$timeit" "$BRIG"; do
	command -v "$tool" >/dev/null || die "$tool is missing (make bench-sandbox builds bench-timeit; jq comes from Debian)"
done
[ -x "$tree/usr/bin/python3" ] || die "no sandbox tree at $tree (make rootfs)"
seccomp=$(dirname "$BRIG")/seccomp-profiles/sandbox.json
[ -r "$seccomp" ] || seccomp=$top/seccomp-profiles/sandbox.json

work=$(mktemp -d "${TMPDIR:-/tmp}/brig-bench-sandbox.XXXXXX")
chmod 0711 "$work"
log=$work/errors.log
states=$(mktemp -d /run/brig-bench-sandbox.XXXXXX)
export BRIG_SANDBOX_DIR=$work/sandboxes BRIG_EGRESS_DIR=$work/egress
export BRIG_EGRESS_LOG=$work/egress.log BRIG_EGRESS_CONFIG=$work/none.conf
[ -n "${BRIG_EGRESS:-}" ] || export BRIG_EGRESS=$(dirname "$BRIG")/brig-egress
[ -n "${BRIG_INIT:-}" ] || export BRIG_INIT=$(dirname "$BRIG")/brig-init

declare -a runtimes=()
declare -A bin=()
runsc_flags=()

# clear_cgroups PREFIX...: the empty cgroups a runtime left behind for the
# sandboxes PREFIX* (runsc's delete leaves its /ID in every hierarchy,
# and its processes may still be on their way out): each memory cgroup
# left would weigh on every later figure. Tried again for up to 30 s.
clear_cgroups() {
	local d k p left
	for ((k = 0; k < 60; k++)); do
		left=0
		for p in "$@"; do
			for d in /sys/fs/cgroup/"$p"* /sys/fs/cgroup/*/"$p"*; do
				[ -d "$d" ] || continue
				rmdir "$d" 2>/dev/null || left=1
			done
		done
		((left)) || return 0
		sleep 0.5
	done
	return 0
}

cleanup() {
	local id
	set +e
	for id in $("$BRIG" --root "$states/brig" list -q 2>/dev/null); do
		"$BRIG" --root "$states/brig" sandbox rm "$id" >/dev/null 2>&1
	done
	for id in $("$RUNC" --root "$states/runc" list -q 2>/dev/null); do
		"$RUNC" --root "$states/runc" delete -f "$id" >/dev/null 2>&1
	done
	for id in $("$RUNSC" --root "$states/runsc" list -q 2>/dev/null); do
		"$RUNSC" --root "$states/runsc" delete --force "$id" >/dev/null 2>&1
	done
	# A runsc that hung (a platform that doesn't work here) goes too.
	pkill -KILL -f -- "--root=$states/runsc " 2>/dev/null
	for pid in $(sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" 2>/dev/null); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = brig-egress ] && kill "$pid"
	done
	# What a stage could not clear in its 30 s (runsc's 1000 take long to
	# go) is cleared now, so that no later run starts with them.
	clear_cgroups {ready,exec,idle,d,probe}-{runsc,runc}
	rm -rf "$work" "$states"
}
trap cleanup EXIT

# ------------------------------------------------------------- bundles ----

# One config for runc and runsc: brig's default spec, made a sandbox.
(cd "$work" && "$BRIG" spec)
jq --arg tree "$tree" --slurpfile sc "$seccomp" '
	.ociVersion = "1.0.2"
	| .root = {path: $tree, readonly: true}
	| .process.terminal = false | .process.args = ["sleep", "infinity"]
	| .process.user = {uid: 1000, gid: 1000} | .process.cwd = "/mnt/data"
	| .process.env = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/mnt/data"]
	| .process.capabilities = {bounding: [], effective: [], permitted: []}
	| .process.noNewPrivileges = true
	| .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs",
	               options: ["nosuid", "nodev", "mode=1777", "size=64m"]},
	              {destination: "/mnt/data", type: "bind", source: "DATA",
	               options: ["rbind", "rw", "nosuid", "nodev"]}]
	| .linux.namespaces = [{type: "pid"}, {type: "ipc"}, {type: "uts"},
	                       {type: "mount"}, {type: "network"}]
	| .linux.resources = {memory: {limit: 536870912}, pids: {limit: 256},
	                      cpu: {quota: 100000, period: 100000}}
	| .linux.seccomp = $sc[0]' "$work/config.json" >"$work/template.json"

# bundle ID: a bundle of its own, with a /mnt/data of its own.
bundle() {
	mkdir -p "$work/b/$1" "$work/data/$1"
	chown 1000:1000 "$work/data/$1"
	sed "s|\"DATA\"|\"$work/data/$1\"|" "$work/template.json" >"$work/b/$1/config.json"
}

# ------------------------------------------------------------ runtimes ----

# The commands of each runtime, for one sandbox ID.
start_sb() { # RT ID
	case $1 in
	brig) "$BRIG" --root "$states/brig" sandbox create --rootfs "$tree" --network packages \
		--memory 512M --pids 256 --cpus 1 "$2" ;;
	runc) "$RUNC" --root "$states/runc" run -d --bundle "$work/b/$2" "$2" </dev/null ;;
	runsc) "$RUNSC" --root "$states/runsc" "${runsc_flags[@]}" run --detach --bundle "$work/b/$2" "$2" </dev/null ;;
	esac
}
# exec_cmd RT ID COMMAND... and rm_cmd RT ID: the runtime's command line
# in the array CMD, which exec and rm are timed as (nothing around it).
exec_cmd() {
	local rt=$1 id=$2
	shift 2
	case $rt in
	brig) CMD=("$BRIG" --root "$states/brig" sandbox exec "$id" -- "$@") ;;
	runc) CMD=("$RUNC" --root "$states/runc" exec --user 1000:1000 --cwd /mnt/data "$id" "$@") ;;
	runsc) CMD=("$RUNSC" --root "$states/runsc" "${runsc_flags[@]}" exec --user 1000:1000 --cwd /mnt/data "$id" "$@") ;;
	esac
}
rm_cmd() {
	case $1 in
	brig) CMD=("$BRIG" --root "$states/brig" sandbox rm "$2") ;;
	runc) CMD=("$RUNC" --root "$states/runc" delete -f "$2") ;;
	runsc) CMD=("$RUNSC" --root "$states/runsc" "${runsc_flags[@]}" delete --force "$2") ;;
	esac
}
exec_sb() { # RT ID COMMAND...
	local CMD
	exec_cmd "$@"
	"${CMD[@]}"
}
rm_sb() { # RT ID
	local CMD
	rm_cmd "$@"
	"${CMD[@]}"
}
export BRIG RUNC RUNSC states work tree

probe() { # RT [ID]: it can start a sandbox and exec into it
	local id=${2:-probe-$1} rc=0
	[ "$1" = brig ] || bundle "$id"
	start_sb "$1" "$id" >/dev/null 2>>"$log" && exec_sb "$1" "$id" python3 -c pass >/dev/null 2>>"$log" || rc=1
	rm_sb "$1" "$id" >/dev/null 2>&1 || true
	return $rc
}

skipped=""
want=" ${BENCH_SB_RUNTIMES:-brig runsc runc} "
add_runtime() { # NAME BINARY
	[[ "$want" == *" $1 "* ]] || return 0
	local path
	if ! path=$(command -v "$2" 2>/dev/null); then
		skipped="$skipped$1: not installed; "
		return 0
	fi
	mkdir -p "$states/$1"
	bin[$1]=$path
	runtimes+=("$1")
}
add_runtime brig "$BRIG"
add_runtime runc "$RUNC"
add_runtime runsc "$RUNSC"
export RUNC=${bin[runc]:-$RUNC} RUNSC=${bin[runsc]:-$RUNSC}

platform=none
checked=()
for r in "${runtimes[@]}"; do
	if [ "$r" = runsc ]; then
		# kvm where it works, else ptrace; a platform that hangs gets 30 s.
		for p in kvm ptrace; do
			runsc_flags=(--platform="$p" --network=none --oci-seccomp)
			rc=0
			timeout -k 5 30 bash -c "$(declare -f probe bundle start_sb exec_cmd exec_sb rm_cmd rm_sb)
				runsc_flags=(${runsc_flags[*]}); log=$log; probe runsc probe-runsc-$p" || rc=$?
			if [ "$rc" = 0 ]; then
				platform=$p
				break
			elif [ "$rc" -ge 124 ]; then
				echo "no sandbox in 30 s" >>"$log"
			fi
			skipped="${skipped}runsc --platform=$p: $(tail -1 "$log" | cut -c1-120); "
			pkill -KILL -f -- "--root=$states/runsc .*--platform=$p" || true
			"$RUNSC" --root "$states/runsc" delete --force "probe-runsc-$p" >/dev/null 2>&1 || true
		done
		[ "$platform" != none ] || continue
	elif ! probe "$r"; then
		skipped="$skipped$r: $(tail -1 "$log"); "
		continue
	fi
	checked+=("$r")
done
runtimes=("${checked[@]}")
case " ${runtimes[*]} " in *" brig "*) ;; *) die "brig cannot run a sandbox here: $skipped" ;; esac
skipped=${skipped%; }
[ -z "$skipped" ] || echo "# left out: $skipped"
echo "# runtimes: ${runtimes[*]}; runsc platform: $platform; tree $tree"

# The runsc flags reach the functions that bench-timeit's shells run.
sh_prelude="$(declare -f start_sb exec_cmd exec_sb rm_cmd rm_sb); runsc_flags=(${runsc_flags[*]})"

# timed FILE COMMAND...: one timed run, appended to FILE as "NS KB".
timed() {
	local file=$1
	shift
	"$timeit" -l "$log" -- "$@" >>"$work/$file" || die "$* failed: $(tail -3 "$log")"
}
# timed_sh FILE SCRIPT ARGS...: the same for a bash script that may call
# start_sb, exec_sb and rm_sb.
timed_sh() {
	local file=$1 script=$2
	shift 2
	timed "$file" bash -c "$sh_prelude; $script" bash "$@"
}

# rotated (lib.sh) orders the runtimes of each round.

# ------------------------------------------------------------- ready, rm ----

echo "# ready and rm: $READY_N each"
for ((i = 0; i < READY_N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}"); do
		id=ready-$r-$i
		[ "$r" = brig ] || bundle "$id"
		timed_sh "ready.$r" 'start_sb "$1" "$2" >/dev/null && exec_sb "$1" "$2" python3 -c pass' "$r" "$id"
		rm_cmd "$r" "$id"
		timed "rm.$r" "${CMD[@]}"
	done
done
for r in "${runtimes[@]}"; do
	clear_cgroups "ready-$r-"
done

# ---------------------------------------------------------------- exec ----

echo "# exec: $EXEC_N each of true and python3"
for r in "${runtimes[@]}"; do
	[ "$r" = brig ] || bundle "exec-$r"
	start_sb "$r" "exec-$r" >/dev/null 2>>"$log" || die "$r: cannot start the exec target: $(tail -3 "$log")"
done
for ((i = 0; i < EXEC_N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}"); do
		# An untimed one first: what is timed follows its own runtime.
		exec_sb "$r" "exec-$r" true >/dev/null 2>>"$log" || die "$r: exec failed: $(tail -3 "$log")"
		exec_cmd "$r" "exec-$r" true
		timed "exec_true.$r" "${CMD[@]}"
		exec_cmd "$r" "exec-$r" python3 -c 'print(1)'
		timed "exec_python.$r" "${CMD[@]}"
	done
done

# ---------------------------------------------------------------- work ----

# The library's files, stat'ed, opened and closed ten times over.
syscall_job='
import os, time
fs = [os.path.join(d, f) for d, _, names in os.walk("/usr/lib/python3.11") for f in names][:2000]
t = time.perf_counter()
for _ in range(10):
    for f in fs:
        os.stat(f)
        os.close(os.open(f, os.O_RDONLY))
print(int((time.perf_counter() - t) * 1e9))'
file_job='rm -rf /mnt/data/x && mkdir /mnt/data/x && s=$(date +%s%N) &&
tar -xf /mnt/data/lib.tar -C /mnt/data/x && find /mnt/data/x -type f -exec cat {} + >/dev/null &&
echo $(($(date +%s%N) - s))'
cpu_job='
import time
t = time.perf_counter()
s = 0
for i in range(5_000_000):
    s += i * i
print(int((time.perf_counter() - t) * 1e9))'
tar -cf "$work/lib.tar" -C "$tree" usr/lib/python3.11
echo "# work inside: $WORK_N each; the tarball is $(du -h "$work/lib.tar" | cut -f1)"
for r in "${runtimes[@]}"; do
	if [ "$r" = brig ]; then
		"$BRIG" --root "$states/brig" sandbox cp "$work/lib.tar" exec-brig:/mnt/data/lib.tar
	else
		cp "$work/lib.tar" "$work/data/exec-$r/lib.tar"
		chown 1000:1000 "$work/data/exec-$r/lib.tar"
	fi
done
# inside FILE RT COMMAND...: the time the command prints, as "NS 0", from
# its second run: the first, untimed, warms the caches for it, so that no
# runtime's figure carries what the one before it left (here, brig's
# syscall-heavy job right after runsc's took 5 to 25 % longer than right
# after runc's, in two tries of 8 and 12 rounds).
inside() {
	local file=$1 rt=$2 ns
	shift 2
	exec_sb "$rt" "exec-$rt" "$@" >/dev/null 2>>"$log" || die "$rt: $* failed: $(tail -3 "$log")"
	ns=$(exec_sb "$rt" "exec-$rt" "$@" 2>>"$log" | tail -1) || die "$rt: $* failed: $(tail -3 "$log")"
	[[ "$ns" =~ ^[0-9]+$ ]] || die "$rt: $file printed \`$ns\`"
	echo "$ns 0" >>"$work/$file"
}
for ((i = 0; i < WORK_N; i++)); do
	for r in $(rotated "$i" "${runtimes[@]}"); do
		inside "work_syscall.$r" "$r" python3 -c "$syscall_job"
		inside "work_file.$r" "$r" sh -c "$file_job"
		inside "work_cpu.$r" "$r" python3 -c "$cpu_job"
	done
done
for r in "${runtimes[@]}"; do
	rm_sb "$r" "exec-$r" >/dev/null 2>>"$log" || true
	clear_cgroups "exec-$r"
done

# ---------------------------------------------------------------- idle ----

# mem_kb: "AVAILABLE ACCOUNTED" with caches dropped, once settled (two
# readings a second apart within 2 MiB: writeback that is still going
# pins pages for a while). MemAvailable is what the issue measures, but
# on a host whose other tenants come and go it swings by MiBs; ACCOUNTED
# adds up what the kernel holds for processes and kernel objects (slab,
# page tables, per-CPU, vmalloc with the kernel stacks in it, anon,
# shmem, buffers), which only the sandboxes move.
mem_kb() {
	local prev=-1 now k
	for ((k = 0; k < 15; k++)); do
		sync
		echo 3 >/proc/sys/vm/drop_caches
		sleep 1
		now=$(awk '/^MemAvailable:/ { a = $2 }
			/^(Slab|PageTables|Percpu|VmallocUsed|AnonPages|Shmem|Buffers):/ { s += $2 }
			END { print a, s }' /proc/meminfo)
		((prev >= 0 && ${now% *} - prev < 2048 && prev - ${now% *} < 2048)) && break
		prev=${now% *}
	done
	echo "$now"
}
bundles() { # RT PREFIX N: bundles PREFIX-0 .. PREFIX-(N-1), for runc and runsc
	local k
	[ "$1" = brig ] && return 0
	for ((k = 0; k < $3; k++)); do
		bundle "$2-$k"
	done
}
declare -A idle_kb=() idle_acct=()
echo "# idle memory: $IDLE_N sandboxes each"
for r in "${runtimes[@]}"; do
	bundles "$r" "idle-$r" "$IDLE_N"
	read -r before before_acct < <(mem_kb)
	for ((k = 0; k < IDLE_N; k++)); do
		start_sb "$r" "idle-$r-$k" >/dev/null 2>>"$log" || die "$r: idle sandbox $k: $(tail -3 "$log")"
	done
	sleep 2
	read -r after after_acct < <(mem_kb)
	idle_kb[$r]=$(((before - after) / IDLE_N))
	idle_acct[$r]=$(((after_acct - before_acct) / IDLE_N))
	for ((k = 0; k < IDLE_N; k++)); do
		rm_sb "$r" "idle-$r-$k" >/dev/null 2>>"$log" || true
	done
	clear_cgroups "idle-$r-"
done

# ------------------------------------------------------------- density ----

declare -A dens_n=() dens_s=() dens_rate=() dens_kb=() dens_acct=() dens_exec=() dens_stop=()
total_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
floor_kb=$((total_kb / 4))
echo "# density: up to $DENSITY_N each, $PARALLEL at a time, $BUDGET s at most"
for r in "${runtimes[@]}"; do
	bundles "$r" "d-$r" "$DENSITY_N"
	read -r before before_acct < <(mem_kb)
	n=0 stop="all $DENSITY_N" t0=$(date +%s%N)
	while ((n < DENSITY_N)); do
		batch=$((DENSITY_N - n < 50 ? DENSITY_N - n : 50))
		if ! seq "$n" $((n + batch - 1)) |
			xargs -P "$PARALLEL" -I{} bash -c "$sh_prelude; start_sb $r d-$r-{} >/dev/null" 2>>"$log"; then
			stop="a create failed after $n: $(tail -1 "$log")"
			break
		fi
		n=$((n + batch))
		avail=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
		elapsed=$((($(date +%s%N) - t0) / 1000000000))
		if ((n < DENSITY_N && avail < floor_kb)); then
			stop="stopped at $n: MemAvailable under a quarter of the memory"
			break
		elif ((n < DENSITY_N && elapsed >= BUDGET)); then
			stop="stopped at $n: $BUDGET s spent"
			break
		fi
	done
	t1=$(date +%s%N)
	answered=0
	for ((k = 0; k < n; k++)); do
		exec_sb "$r" "d-$r-$k" true >/dev/null 2>>"$log" && answered=$((answered + 1))
	done
	read -r after after_acct < <(mem_kb)
	dens_n[$r]=$n
	dens_s[$r]=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }')
	dens_rate[$r]=$(awk -v n="$n" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }')
	dens_kb[$r]=$(((before - after) / (n > 0 ? n : 1)))
	dens_acct[$r]=$(((after_acct - before_acct) / (n > 0 ? n : 1)))
	dens_exec[$r]=$answered
	dens_stop[$r]=$stop
	echo "#   $r: $n in ${dens_s[$r]} s (${dens_rate[$r]}/s), $answered answered, ${dens_kb[$r]} KB each (${dens_acct[$r]} KB accounted); $stop"
	for ((k = 0; k < n; k++)); do
		echo "d-$r-$k"
	done | xargs -P $((4 * PARALLEL)) -I{} bash -c "$sh_prelude; rm_sb $r {} >/dev/null 2>&1" || true
	clear_cgroups "d-$r-"
done

# -------------------------------------------------------------- report ----

# The benchmarks timed once per round, a file per runtime.
timed_benches=(ready exec_true exec_python rm work_syscall work_file work_cpu)
stats() { # FILE: median p10 p90 p99 n, in ms
	sort -n -k1,1 "$work/$1" | awk '
		{ t[NR] = $1 / 1e6 }
		function pct(p,  k) { k = int(p * (NR - 1) + 0.5) + 1; return t[k] }
		END { printf "%.2f %.2f %.2f %.2f %d\n", pct(0.5), pct(0.1), pct(0.9), pct(0.99), NR }'
}
json_bench() { # BENCH: one JSON object, a member per runtime
	local b=$1 r
	for r in "${runtimes[@]}"; do
		[ -s "$work/$b.$r" ] || continue
		read -r med p10 p90 p99 n < <(stats "$b.$r")
		jq -n --arg r "$r" --argjson med "$med" --argjson p10 "$p10" --argjson p90 "$p90" \
			--argjson p99 "$p99" --argjson n "$n" \
			'{($r): {median_ms: $med, p10_ms: $p10, p90_ms: $p90, p99_ms: $p99, n: $n}}'
	done | jq -s --arg b "$b" '{($b): add}'
}
# paired BENCH OTHER: the median, over the rounds, of brig's time over
# OTHER's in the same round (line k of each file is round k). Both runs
# of a round are seconds apart, so the machine's swings in speed, which
# move a median by a third here, mostly cancel out; "null" when either is
# missing.
paired() {
	if [ ! -s "$work/$1.brig" ] || [ ! -s "$work/$1.$2" ]; then
		echo null
		return
	fi
	paste -d ' ' "$work/$1.brig" "$work/$1.$2" | awk '$3 > 0 { print $1 / $3 }' | sort -g | awk '
		{ r[NR] = $1 }
		END { if (NR == 0) print "null"; else printf "%.3f\n", r[int(0.5 * (NR - 1) + 0.5) + 1] }'
}
json_paired() { # the paired ratios of every timed bench
	local b
	for b in "${timed_benches[@]}"; do
		jq -n --arg b "$b" --argjson s "$(paired "$b" runsc)" --argjson c "$(paired "$b" runc)" \
			'{($b): {"brig/runsc": $s, "brig/runc": $c}}'
	done | jq -s add
}
json_one() { # RT: idle and density of one runtime
	jq -n --arg r "$1" --argjson idle "${idle_kb[$1]}" --argjson idle_acct "${idle_acct[$1]}" \
		--argjson n "${dens_n[$1]}" --argjson acct "${dens_acct[$1]}" \
		--argjson s "${dens_s[$1]}" --argjson rate "${dens_rate[$1]}" --argjson kb "${dens_kb[$1]}" \
		--argjson ans "${dens_exec[$1]}" --arg stop "${dens_stop[$1]}" \
		'{($r): {idle_kb: $idle, idle_accounted_kb: $idle_acct,
		         density: {sandboxes: $n, seconds: $s, per_second: $rate, kb_each: $kb,
		                   accounted_kb_each: $acct, answered: $ans, end: $stop}}}'
}
{
	for b in "${timed_benches[@]}"; do
		json_bench "$b"
	done
	for r in "${runtimes[@]}"; do json_one "$r"; done | jq -s '{memory: add}'
} | jq -s --arg date "$(date -u +%Y-%m-%dT%H:%MZ)" --arg kernel "$(uname -r)" \
	--arg platform "$platform" --arg skipped "$skipped" --arg tree "$tree" \
	--argjson parallel "$PARALLEL" --arg cpus "$(nproc)" --argjson mem "$total_kb" \
	--argjson paired "$(json_paired)" '
	add as $b
	| def ratio($x; $a; $y): if $b[$x][$a] and $b[$x][$y]
		then ($b[$x][$a].median_ms / $b[$x][$y].median_ms * 1000 | round / 1000) else null end;
	def mratio($a; $y; f): if $b.memory[$a] and $b.memory[$y] and ($b.memory[$y] | f) > 0
		then (($b.memory[$a] | f) / ($b.memory[$y] | f) * 1000 | round / 1000) else null end;
	{date: $date, kernel: $kernel, cpus: $cpus, mem_kb: $mem, tree: $tree,
	 runsc_platform: $platform, parallel: $parallel, left_out: $skipped, benchmarks: $b,
	 ratios: (($b | keys - ["memory"] | map({(.): {"brig/runsc": ratio(.; "brig"; "runsc"),
	                                               "brig/runc": ratio(.; "brig"; "runc")}}) | add)
	          + {idle: {"brig/runsc": mratio("brig"; "runsc"; .idle_kb),
	                    "brig/runc": mratio("brig"; "runc"; .idle_kb)},
	             idle_accounted: {"brig/runsc": mratio("brig"; "runsc"; .idle_accounted_kb),
	                              "brig/runc": mratio("brig"; "runc"; .idle_accounted_kb)},
	             density_rate: {"brig/runsc": mratio("brig"; "runsc"; .density.per_second),
	                            "brig/runc": mratio("brig"; "runc"; .density.per_second)}}),
	 paired_ratios: $paired}' >"$result"

jq -r '"# \(.date), kernel \(.kernel), \(.cpus) CPUs; runsc --platform=\(.runsc_platform); median [p10-p90] p99 ms"' "$result"
{
	jq -r '.benchmarks | to_entries[] | select(.key != "memory") | .key as $b | .value | to_entries[]
		| "\($b)\t\(.key)\t\(.value.median_ms)\t[\(.value.p10_ms)-\(.value.p90_ms)]\tp99 \(.value.p99_ms)"' "$result"
	jq -r '.benchmarks.memory | to_entries[] | "idle\t\(.key)\t\(.value.idle_kb) KB each (\(.value.idle_accounted_kb) KB accounted)"' "$result"
	jq -r '.benchmarks.memory | to_entries[] | .key as $r | .value.density
		| "density\t\($r)\t\(.sandboxes) in \(.seconds) s\t\(.per_second)/s\t\(.kb_each) KB each (\(.accounted_kb_each) accounted), \(.answered) answered"' "$result"
} | column -t -s "$(printf '\t')"
for kind in ratios paired; do
	jq -r --arg kind "$kind" '(if $kind == "paired" then .paired_ratios else .ratios end)
		| to_entries[] | "\(.key)\t\($kind)  "
		+ (.value | to_entries | map(select(.value != null) | "\(.key) \(.value)") | join("  "))' "$result" |
		column -t -s "$(printf '\t')"
done
echo "# written to $result"
