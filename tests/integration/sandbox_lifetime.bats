#!/usr/bin/env bats
# Sandboxes' lifetimes: `brig sandbox create --ttl --idle-timeout
# --exec-timeout`, the record they leave in the sandbox's dir, `ls`'s
# LEFT, and brig-reaper, which removes a sandbox when its time is up with
# no command run, outlives the CLI, exits when no limit is left, and
# catches up on what passed while it was not running. Needs what
# sandbox.bats needs (the tree, brig-init, loop devices) and brig-reaper
# beside brig (or $BRIG_REAPER). Durations are seconds, so the file runs
# in about half a minute.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
IDS=(lt-ttl lt-idle lt-plain lt-forms lt-bad lt-k1 lt-k2 lt-k3)

setup_file() {
	sandbox_file_env
	export BRIG_REAPER_LOG=$BATS_FILE_TMPDIR/reaper.log
	if [ -z "${BRIG_REAPER:-}" ]; then
		export BRIG_REAPER
		BRIG_REAPER=$(dirname "$BRIG")/brig-reaper
	fi
	# The home as the reaper's command line names it.
	export SB_HOME
	SB_HOME=$(realpath -m "$BRIG_SANDBOX_DIR")
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	local id pid
	for id in "${IDS[@]}"; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	pid=$(reaper_pid)
	[ -z "$pid" ] || kill "$pid"
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -x "$BRIG_INIT" ] || fail "no brig-init at $BRIG_INIT: build it or set BRIG_INIT"
	[ -x "$BRIG_REAPER" ] || fail "no brig-reaper at $BRIG_REAPER: build it or set BRIG_REAPER"
}

teardown() {
	:
}

create() {
	sb create --rootfs "$ROOTFS_TREE" --network none "$@"
}

now_ms() {
	date +%s%3N
}

# The pid of this home's reaper, or nothing.
reaper_pid() {
	pgrep -f "^brig-reaper --home $SB_HOME\$" || true
}

# wait_until SECONDS CMD...: until CMD succeeds, tried every 0.1 s.
wait_until() {
	local tries=$(($1 * 10)) k
	shift
	for ((k = 0; k < tries; k++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# wait_gone ID SECONDS: until the sandbox's dir is gone.
wait_gone() {
	wait_until "$2" test ! -e "$BRIG_SANDBOX_DIR/$1" ||
		fail "sandbox $1 is still there after $2 s: $(cat "$BRIG_REAPER_LOG" 2>/dev/null)"
}

no_reaper() {
	[ -z "$(reaper_pid)" ]
}

# wait_no_reaper SECONDS: until this home's reaper has exited.
wait_no_reaper() {
	wait_until "$1" no_reaper || fail "the reaper still runs after $1 s: $(cat "$BRIG_REAPER_LOG")"
}

# assert_removed ID CGROUP_DIRS: nothing of it is left: dir, container,
# mounts, loop device, cgroups.
assert_removed() {
	local cg
	[ ! -e "$BRIG_SANDBOX_DIR/$1" ] || fail "$BRIG_SANDBOX_DIR/$1 is left"
	[ ! -e "$SB_ROOT/$1" ] || fail "its container $SB_ROOT/$1 is left"
	refute grep -q "$BRIG_SANDBOX_DIR/$1" /proc/self/mountinfo
	refute sh -c "losetup -a | grep -q '$BRIG_SANDBOX_DIR/$1/'"
	[ -n "$2" ] || fail "no cgroup dirs to check"
	for cg in $2; do
		[ ! -e "$cg" ] || fail "$cg is left"
	done
}

@test "sandbox create --ttl: removed when it is up, with no command run, by a reaper that outlives the CLI and then exits" {
	[ -z "$(reaper_pid)" ] || fail "a reaper runs before the test"
	start=$(now_ms)
	create --ttl 3s lt-ttl
	grep -qx ttl=3000 "$BRIG_SANDBOX_DIR/lt-ttl/lifetime"
	cgs=$(jq -r .cgroupPath "$SB_ROOT/lt-ttl/state.json")
	# The CLI is gone; the reaper runs on, in a session of its own.
	pid=$(reaper_pid)
	[ -n "$pid" ] || fail "no reaper runs for $SB_HOME"
	[ "$(ps -o sid= -p "$pid")" != "$(ps -o sid= -p $$)" ]
	run sb ls
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf '%-20s %-10s %-6s %-6s %s' ID STATE AGE LEFT DATA)" ]
	echo "$output" | grep -Eq '^lt-ttl +running +[0-9]s +[0-3]s +[0-9.]+[BKM]/[0-9.]+G$'
	wait_gone lt-ttl 8
	[ $(($(now_ms) - start)) -ge 2900 ] || fail "removed before its ttl"
	assert_removed lt-ttl "$cgs"
	grep -q "removed sandbox=lt-ttl reason=ttl limit=3s late=" "$BRIG_REAPER_LOG"
	# No sandbox with a limit is left: it exits.
	wait_no_reaper 3
	grep -q "stopped: no sandbox has a limit left" "$BRIG_REAPER_LOG"
}

@test "sandbox create --idle-timeout: copies keep it alive past it, then it goes once idle" {
	create --idle-timeout 3s lt-idle
	cgs=$(jq -r .cgroupPath "$SB_ROOT/lt-idle/state.json")
	echo data >"$BATS_TEST_TMPDIR/f"
	for i in 1 2 3 4 5; do
		sleep 1
		if [ $((i % 2)) = 1 ]; then
			sb cp "$BATS_TEST_TMPDIR/f" "lt-idle:f$i"
		else
			sb cp lt-idle:f1 "$BATS_TEST_TMPDIR/out$i"
		fi
	done
	last=$(now_ms)
	# Five seconds after its create, three after nothing: still here.
	[ "$("$BRIG" --root "$SB_ROOT" state lt-idle | jq -r .status)" = running ]
	run sb ls
	echo "$output" | grep -Eq '^lt-idle +running +[0-9]s +[1-3]s '
	wait_gone lt-idle 8
	[ $(($(now_ms) - last)) -ge 2900 ] || fail "removed before it was idle for 3s"
	assert_removed lt-idle "$cgs"
	grep -q "removed sandbox=lt-idle reason=idle limit=3s" "$BRIG_REAPER_LOG"
	wait_no_reaper 3
}

@test "sandbox create: every sandbox has a record; 30s, 5m, 2h and plain seconds; ls shows LEFT" {
	create lt-plain
	run cat "$BRIG_SANDBOX_DIR/lt-plain/lifetime"
	[[ "$output" == *$'ttl=0\nidle=0\nexec_timeout=0\nroot='"$SB_ROOT"* ]]
	[ -e "$BRIG_SANDBOX_DIR/lt-plain/active" ]
	# No limit: no reaper.
	[ -z "$(reaper_pid)" ]
	create --ttl 2h --idle-timeout 5m --exec-timeout 30 lt-forms
	run cat "$BRIG_SANDBOX_DIR/lt-forms/lifetime"
	[[ "$output" == *$'ttl=7200000\nidle=300000\nexec_timeout=30000\n'* ]]
	run sb ls
	echo "$output" | grep -Eq '^lt-plain +running +[0-9]+s +- +'
	echo "$output" | grep -Eq '^lt-forms +running +[0-9]+s +4m +'
	[ -n "$(reaper_pid)" ]
	sb rm lt-forms
	sb rm lt-plain
	# The last limit went with rm: the reaper is told, and exits.
	wait_no_reaper 3
}

@test "sandbox create --exec-timeout: every exec's default timeout, which --timeout overrides; an exec is activity" {
	create --exec-timeout 1s --idle-timeout 4s lt-k1
	local t0
	t0=$(now_ms)
	run sb exec lt-k1 -- sleep 10
	[ "$status" -eq 124 ]
	(($(now_ms) - t0 < 5000)) || fail "the exec ran $(($(now_ms) - t0)) ms"
	run sb exec --timeout 3s lt-k1 -- sh -c 'sleep 2; echo done'
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	# Execs every second keep it past its idle timeout.
	for _ in 1 2 3 4 5 6; do
		sb exec lt-k1 -- true
		sleep 1
	done
	[ "$("$BRIG" --root "$SB_ROOT" state lt-k1 | jq -r .status)" = running ]
	wait_gone lt-k1 8
}

@test "sandbox create: a bad duration is one line, and nothing is made" {
	local bad=(--ttl 0 --ttl 0s --ttl abc --ttl 500ms --ttl 721h --ttl nan --ttl ''
		--idle-timeout 5x --idle-timeout -3s --exec-timeout 0 --exec-timeout 1d)
	# Not `i`: bats's run sets one of its own.
	local n
	for ((n = 0; n < ${#bad[@]}; n += 2)); do
		run --separate-stderr sb create --network none "${bad[n]}" "${bad[n + 1]}" lt-bad
		assert_one_line_error "sandbox create: invalid ${bad[n]} \`${bad[n + 1]}\`"
		[ ! -e "$BRIG_SANDBOX_DIR/lt-bad" ]
		[ ! -e "$SB_ROOT/lt-bad" ]
	done
	[ -z "$(reaper_pid)" ]
	# A create that fails past its flags leaves no record either.
	mkdir "$BATS_TEST_TMPDIR/tree"
	run sb create --network none --ttl 30s --rootfs "$BATS_TEST_TMPDIR/tree" lt-bad
	[ "$status" -ne 0 ]
	[ ! -e "$BRIG_SANDBOX_DIR/lt-bad" ]
	wait_no_reaper 3
}

@test "brig-reaper killed: an overdue sandbox goes at the next reap, or with the reaper the next create starts" {
	create --ttl 2s lt-k1
	pid=$(reaper_pid)
	[ -n "$pid" ]
	kill -KILL "$pid"
	sleep 2.5
	# Nothing enforced it: overdue, and still here.
	[ -d "$BRIG_SANDBOX_DIR/lt-k1" ]
	run sb ls
	echo "$output" | grep -Eq '^lt-k1 +running +[0-9]s +0s '
	cgs=$(jq -r .cgroupPath "$SB_ROOT/lt-k1/state.json")
	run sb reap
	[ "$status" -eq 0 ]
	[ "$output" = "removed lt-k1 (ttl 2s)" ]
	assert_removed lt-k1 "$cgs"
	# Nothing left with a limit: reap started no reaper.
	[ -z "$(reaper_pid)" ]

	create --ttl 2s lt-k2
	cgs=$(jq -r .cgroupPath "$SB_ROOT/lt-k2/state.json")
	kill -KILL "$(reaper_pid)"
	sleep 2.5
	[ -d "$BRIG_SANDBOX_DIR/lt-k2" ]
	# The next create with a limit starts a reaper, whose first pass
	# removes the overdue one.
	create --ttl 1m lt-k3
	wait_gone lt-k2 3
	assert_removed lt-k2 "$cgs"
	grep -q "removed sandbox=lt-k2 reason=ttl limit=2s" "$BRIG_REAPER_LOG"
	[ -d "$BRIG_SANDBOX_DIR/lt-k3" ]
	sb rm lt-k3
	wait_no_reaper 3
}
