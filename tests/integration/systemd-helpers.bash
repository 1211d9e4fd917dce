#!/usr/bin/env bash
# shellcheck disable=SC2154 # bats' own variables
# The systemd driver's tests (systemd.bats on cgroup v2, systemd_v1.bats on a
# hybrid host): brig or runc with --systemd-cgroup, each with a state root of
# its own, and what systemd says of a unit. They need systemd as PID 1
# (tests/vm/run.sh --systemd); elsewhere each test skips, saying so.

RUNC=${RUNC:-/usr/sbin/runc}

setup() {
	[ "$(cat /proc/1/comm)" = systemd ] ||
		skip "needs systemd as PID 1 (tests/vm/run.sh --systemd)"
	setup_bundle
	RUNC_ROOT=$BATS_TEST_TMPDIR/runc-state
}

teardown() {
	[ "$(cat /proc/1/comm)" = systemd ] || return 0
	local d
	for d in "$RUNC_ROOT"/*/; do
		[ -d "$d" ] && "$RUNC" --root "$RUNC_ROOT" delete --force "$(basename "$d")" >/dev/null 2>&1
	done
	teardown_bundle
}

# rt RUNTIME ARGS...: brig or runc (RUNTIME "runc") with the systemd driver,
# each with a state root of its own.
rt() {
	local bin=$BRIG root=$ROOT
	[ "$1" = runc ] && bin=$RUNC root=$RUNC_ROOT
	shift
	BRIG_TEST_MARK=$MARK timeout -k 5 "$BRIG_TEST_TIMEOUT" "$bin" --root "$root" --systemd-cgroup "$@"
}

rt_detached() {
	detached rt "$@"
}

# show UNIT PROPERTY: the property's value, as systemctl prints it.
show() {
	systemctl show -p "$2" --value "$1"
}

# scope_dir UNIT: its cgroup directory, from systemd.
scope_dir() {
	echo "/sys/fs/cgroup$(show "$1" ControlGroup)"
}

# a container that sleeps, limited, with its cgroupsPath
limited_bundle() {
	update_config '.process.args = ["sleep", "1000"]
		| .linux.cgroupsPath = $path
		| .linux.resources.memory = { limit: 67108864, reservation: 33554432 }
		| .linux.resources.pids = { limit: 64 }
		| .linux.resources.cpu = { shares: 2048, quota: 12345, period: 100000, cpus: "0" }' \
		--arg path "$1"
}

wait_for_status_of() {
	for _ in $(seq 100); do
		[ "$(rt "$1" state "$CID" | jq -r .status)" = "$2" ] && return 0
		sleep 0.1
	done
	fail "$CID did not become $2"
}

