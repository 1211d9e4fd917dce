#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# A sandbox's view of its own limits (brig-sandbox(8), LIMITS SEEN FROM
# INSIDE): nproc, os.cpu_count(), free and the /proc and /sys files that
# programs size themselves from, through lxcfs and the sandbox's CPU set;
# the host's own view unchanged; a sandbox without the daemon, and a dead
# daemon replaced. Needs what sandbox.bats needs, and lxcfs with /dev/fuse:
# `make check` runs it on the host (v1 hierarchies) and in the test VM
# (cgroup v2). The file's lxcfs is its own (BRIG_LXCFS_DIR), stopped at
# its end.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	export BRIG_LXCFS_DIR=$BATS_FILE_TMPDIR/lxcfs
	timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" \
		--memory 512M --cpus 1 --data-size 64M l1 >"$BATS_FILE_TMPDIR/l1.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in l1 l2 l3; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	stop_lxcfs
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	require_sandboxes l1
}

# stop_lxcfs: the file's lxcfs unmounted and gone (it exits on SIGTERM
# once its mount is detached).
stop_lxcfs() {
	local pid
	pid=$(cat "$BRIG_LXCFS_DIR.pid" 2>/dev/null) || true
	umount -l "$BRIG_LXCFS_DIR" 2>/dev/null || true
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		[ "$(ps -o stat= -p "$pid")" != Z ] || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

@test "sandbox --memory 512M --cpus 1: nproc, os.cpu_count(), free, cpuinfo and online say 1 CPU and 512 MiB" {
	# Said nothing about the view: it has one.
	[ ! -s "$BATS_FILE_TMPDIR/l1.out" ] || [[ "$(cat "$BATS_FILE_TMPDIR/l1.out")" != *"no view"* ]]
	run sb exec l1 -- nproc
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
	run sb exec l1 -- python3 -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'
	[ "$output" = "1 1" ]
	# A pool sized the usual way.
	run sb exec l1 -- python3 -c '
from concurrent.futures import ProcessPoolExecutor
import os
with ProcessPoolExecutor() as pool:
    print(pool._max_workers, sum(pool.map(abs, range(-3, 0))))'
	[ "$status" -eq 0 ]
	[ "$output" = "1 6" ]
	run sb exec l1 -- sh -c 'grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online'
	[ "${lines[0]}" = 1 ]
	[[ "${lines[1]}" =~ ^[0-9]+$ ]]
	run sb exec l1 -- free -m
	[ "$status" -eq 0 ]
	total=$(echo "$output" | awk '/^Mem:/ { print $2 }')
	[ "$total" -ge 500 ] && [ "$total" -le 512 ] || fail "free -m: $output"
	run sb exec l1 -- awk '/^MemTotal:/ { print $2 }' /proc/meminfo
	[ "$output" = 524288 ]
}

@test "sandbox: uptime is its own, loadavg and swaps are the view's, /proc/stat has its CPU" {
	run sb exec l1 -- cat /proc/uptime
	up=${output%%.*}
	host_up=$(cut -d. -f1 /proc/uptime)
	[ "$up" -lt 600 ] && [ "$up" -lt "$host_up" ] || fail "uptime $output, host's $host_up"
	run sb exec l1 -- sh -c 'grep -c "^cpu[0-9]" /proc/stat'
	[ "$output" = 1 ]
	run sb exec l1 -- sh -c 'wc -l </proc/swaps; cat /proc/loadavg'
	[ "${lines[0]}" = 1 ]
	[[ "${lines[1]}" =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+\ [0-9]+/[0-9]+\ [0-9]+$ ]]
	# What the sandbox sees comes from the view, bound read-only.
	run sb exec l1 -- sh -c 'grep -E " /proc/meminfo | /sys/devices/system/cpu/online " /proc/self/mountinfo'
	[ "${#lines[@]}" -eq 2 ]
	[[ "$output" == *fuse.lxcfs* ]]
	run sb exec l1 -- sh -c 'echo x >/proc/meminfo'
	[ "$status" -ne 0 ]
}

@test "the host's own view is unchanged while sandboxes see theirs" {
	[ "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)" -gt 524288 ]
	[ "$(grep -c ^processor /proc/cpuinfo)" = "$(getconf _NPROCESSORS_ONLN)" ]
	refute grep -q " /proc/meminfo " /proc/self/mountinfo
	run python3 -c 'import os; print(os.cpu_count())'
	[ "$output" = "$(grep -c ^processor /proc/cpuinfo)" ]
}

@test "sandbox: a quota over the host's CPUs gets them all; one lxcfs serves every sandbox" {
	n=$(getconf _NPROCESSORS_ONLN)
	sb create --rootfs "$ROOTFS_TREE" --cpus "$((n + 1))" --data-size 16M l2
	run sb exec l2 -- nproc
	[ "$output" = "$n" ]
	run sb exec l2 -- python3 -c 'import os; print(os.cpu_count())'
	[ "$output" = "$n" ]
	[ "$(grep -c " $BRIG_LXCFS_DIR fuse.lxcfs " /proc/mounts)" = 1 ]
	sb rm l2
}

@test "sandbox without lxcfs: one line of warning, the host's numbers, and it works" {
	BRIG_LXCFS=$BATS_FILE_TMPDIR/no-lxcfs BRIG_LXCFS_DIR=$BATS_FILE_TMPDIR/nolxcfs \
		run sb create --rootfs "$ROOTFS_TREE" --memory 512M --data-size 16M l3
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"warning: sandbox \`l3\`: no view of its own limits"*"no-lxcfs"* ]]
	run sb exec l3 -- awk '/^MemTotal:/ { print $2 }' /proc/meminfo
	[ "$output" = "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)" ]
	run sb exec l3 -- python3 -c 'print(2 + 2)'
	[ "$output" = 4 ]
	sb rm l3
}

@test "a dead lxcfs is detached and a new one started by the next create" {
	pid=$(cat "$BRIG_LXCFS_DIR.pid")
	kill -9 "$pid"
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	run cat "$BRIG_LXCFS_DIR/proc/meminfo"
	[ "$status" -ne 0 ]
	sb create --rootfs "$ROOTFS_TREE" --memory 256M --data-size 16M l2
	[ "$(cat "$BRIG_LXCFS_DIR.pid")" != "$pid" ]
	[ "$(grep -c " $BRIG_LXCFS_DIR fuse.lxcfs " /proc/mounts)" = 1 ]
	run sb exec l2 -- awk '/^MemTotal:/ { print $2 }' /proc/meminfo
	[ "$output" = 262144 ]
	sb rm l2
}

@test "brig run --profile sandbox: any bundle's container sees the profile's limits too" {
	setup_bundle
	set_args sh -c 'awk "/^MemTotal:/ { print \$2 }" /proc/meminfo; grep -c " /proc/cpuinfo .*fuse.lxcfs" /proc/self/mountinfo'
	update_config '.root.path = "rootfs"'
	run brig run --profile sandbox "$CID"
	[ "$status" -eq 0 ]
	# The profile's default memory limit, 4 GiB, not the host's (a host
	# with less shows its own: lxcfs says the smaller of the two).
	local host want=4194304
	host=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	[ "$host" -ge "$want" ] || want=$host
	[ "${lines[0]}" = "$want" ]
	[ "${lines[1]}" = 1 ]
	teardown_bundle
}
