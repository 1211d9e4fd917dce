#!/usr/bin/env bats
# shellcheck disable=SC2154 # bats' own variables
# The systemd cgroup driver on a hybrid host (v1 controllers, systemd's v2
# tree at /sys/fs/cgroup/unified): the scope is in every hierarchy, the v1
# files hold the limits, and the lifecycle finds it; runc alongside as the
# reference. tests/check-integration.sh runs it in the test VM booted with
# systemd and systemd.unified_cgroup_hierarchy=0.

load helpers
load systemd-helpers

# memory_limit UNIT: MemoryMax (brig, and systemd's name for v1 too), or
# MemoryLimit, the older name runc 1.1 sets on v1.
memory_limit() {
	local v
	v=$(show "$1" MemoryMax)
	[ "$v" != infinity ] || v=$(show "$1" MemoryLimit)
	echo "$v"
}

# check_hybrid RUNTIME
check_hybrid() {
	local r=$1 unit=brigtest-$CID.scope pid line
	limited_bundle "system.slice:brigtest:$CID"
	rt_detached "$r" run -d "$CID"
	pid=$(rt "$r" state "$CID" | jq -r .pid)
	[ "$(show "$unit" ActiveState)" = active ]
	[ "$(show "$unit" ControlGroup)" = "/system.slice/$unit" ]
	[ "$(memory_limit "$unit")" = 67108864 ]
	[ "$(show "$unit" TasksMax)" = 64 ]
	# the init is in the scope in the hierarchies systemd keeps (and in
	# brig's case in every one)
	for line in memory pids cpu,cpuacct blkio devices name=systemd ""; do
		grep -q ":$line:/system.slice/$unit\$" "/proc/$pid/cgroup" ||
			fail "init not in the scope for '$line': $(cat "/proc/$pid/cgroup")"
	done
	[ "$(cat "/sys/fs/cgroup/memory/system.slice/$unit/memory.limit_in_bytes")" = 67108864 ]
	[ "$(cat "/sys/fs/cgroup/pids/system.slice/$unit/pids.max")" = 64 ]
	[ "$(cat "/sys/fs/cgroup/cpu,cpuacct/system.slice/$unit/cpu.cfs_quota_us")" = 12345 ]
	rt "$r" exec "$CID" sh -c 'echo x >/dev/null && head -c1 /dev/zero | wc -c'
	rt "$r" pause "$CID"
	[ "$(cat "/sys/fs/cgroup/freezer/system.slice/$unit/freezer.state")" = FROZEN ]
	rt "$r" resume "$CID"
	rt "$r" update --memory 268435456 "$CID"
	[ "$(memory_limit "$unit")" = 268435456 ]
	[ "$(cat "/sys/fs/cgroup/memory/system.slice/$unit/memory.limit_in_bytes")" = 268435456 ]
	rt "$r" delete --force "$CID"
	[ "$(show "$unit" ActiveState)" != active ]
	for line in memory pids freezer unified; do
		[ ! -d "/sys/fs/cgroup/$line/system.slice/$unit" ] ||
			fail "the scope's $line cgroup is left"
	done
}

@test "brig --systemd-cgroup on a hybrid host: the scope in every hierarchy, v1 limits, lifecycle" {
	[ -d /sys/fs/cgroup/unified ] || skip "not a hybrid host"
	check_hybrid brig
	# brig-specific: systemd holds the update too, and forgets the unit
	[ "$(show "brigtest-$CID.scope" LoadState)" = not-found ]
	assert_no_leftovers "$CID"
}

@test "runc --systemd-cgroup on a hybrid host (reference)" {
	[ -d /sys/fs/cgroup/unified ] || skip "not a hybrid host"
	check_hybrid runc
}
