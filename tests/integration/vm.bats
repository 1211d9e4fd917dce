#!/usr/bin/env bats
# tests/vm/run.sh: the cgroup v2 test machine that the cgroup tests run in on
# hosts without v2 controllers. Each test boots the machine once (seconds
# under emulation), so each checks several things.

VM=${BATS_TEST_DIRNAME}/../vm/run.sh
# `run --separate-stderr` needs bats 1.5.
bats_require_minimum_version 1.5.0

setup() {
	[ -d /run/brig-vm ] && skip "already inside the test machine"
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		skip "qemu is not installed (tests/vm/run.sh installs it on first use)"
	[ -e "/lib/modules/$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
		sed -n 's/.*linux-image-\([^ ,]*\).*/\1/p')" ] ||
		skip "linux-image-amd64 is not installed (tests/vm/run.sh installs it on first use)"
	SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/brig-vm-test.XXXXXX")
}

teardown() {
	[ -n "${SCRATCH:-}" ] && rm -rf "$SCRATCH"
}

@test "vm: the command's exit status is run.sh's" {
	run "$VM" sh -c 'exit 7'
	[ "$status" -eq 7 ]
	run "$VM" true
	[ "$status" -eq 0 ]
}

@test "vm: pure cgroup v2 with every controller enabled, fifos in /run, the tree shared read-write" {
	run --separate-stderr "$VM" --share "$SCRATCH" -e MARK=vm-mark sh -c '
		cat /sys/fs/cgroup/cgroup.subtree_control
		stat -f -c %T /sys/fs/cgroup
		mkfifo /run/f && mkfifo /tmp/f && echo fifo-ok
		echo "$MARK $HOME $TERM $PWD" >"'"$SCRATCH"'/written"
		echo to-stderr >&2'
	[ "$status" -eq 0 ]
	for c in memory pids cpu io cpuset; do
		[[ "${lines[0]}" == *"$c"* ]]
	done
	[ "${lines[1]}" = cgroup2fs ]
	[ "${lines[2]}" = fifo-ok ]
	[ "$stderr" = to-stderr ]
	[ "$(cat "$SCRATCH/written")" = "vm-mark /root dumb $(pwd -P)" ]
}
