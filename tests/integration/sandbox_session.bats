#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs typed into sessions
# `brig sandbox session` as a user drives it: named processes on a pty in
# a sandbox, held by a process of their own on the host, that outlive the
# command that started them, take input and keep a bounded buffer of
# output. Needs what sandbox.bats needs. One sandbox serves the file; each
# test names its own sessions and ends them. Ids carry the pid of this run:
# a sandbox's cgroup is named by its id, and other runs share the host.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	export SX=sess$$
	timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" \
		--network none --memory 512M --data-size 64M "$SX" >"$BATS_FILE_TMPDIR/$SX.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	"$BRIG" --root "$SB_ROOT" sandbox rm "$SX" >/dev/null 2>&1 || true
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	require_sandboxes "$SX"
	ENDS=""
}

teardown() {
	local name
	for name in $ENDS; do
		ses kill "$SX" "$name" >/dev/null 2>&1 || true
	done
	for id in ${EXTRA_IDS:-}; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
}

ses() {
	timeout -k 5 "$BRIG_TEST_TIMEOUT" "$BRIG" --root "$SB_ROOT" sandbox session "$@"
}

# start NAME [ARGS...]: a session of the file's sandbox, ended at teardown.
start() {
	ENDS="$ENDS $1"
	ses start "$SX" "$@"
}

# info NAME KEY [ID]: a line of the session's info file.
info() {
	sed -n "s/^$2=//p" "$BRIG_SANDBOX_DIR/${3:-$SX}/sessions/$1/info"
}

# running PID: the process exists and is not a zombie.
running() {
	[ -d "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# wait_gone PID: until it no longer runs (~5 seconds).
wait_gone() {
	local i
	for i in $(seq 50); do
		running "$1" || return 0
		sleep 0.1
	done
	fail "process $1 still runs: $(tr '\0' ' ' <"/proc/$1/cmdline")"
}

ms() {
	date +%s%3N
}

@test "session: bash keeps its state from one input to the next, and outlives the CLI" {
	ENDS=sh1
	# Through a pipe, as bats's `run` reads it: the holder must not keep it.
	run ses start "$SX" sh1
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	holder=$(info sh1 holder)
	run find "/proc/$holder/fd" -lname 'pipe:*'
	[ -z "$output" ]
	# Nothing of the CLI is left but the holder, detached.
	run pgrep -f "sandbox session start $SX sh1\$"
	[ "$status" -eq 0 ]
	[ "$output" = "$holder" ]
	# In a session of its own, not the caller's.
	[ "$(ps -o sid= -p "$holder")" != "$(ps -o sid= -p $$)" ]
	run ses input "$SX" sh1 'x=5\n'
	[ "$status" -eq 0 ]
	run ses input "$SX" sh1 'echo $((x+1)); id -u; pwd\n'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 'echo $((x+1)); id -u; pwd' ]
	[ "${lines[1]}" = 6 ]
	[ "${lines[2]}" = 1000 ]
	[ "${lines[3]}" = /mnt/data ]
	[ "${lines[4]}" = '$ ' ]
	running "$(info sh1 pid)"
	# A session's process has no signal ignored or blocked of the holder's
	# or its caller's (this one's caller ignores SIGINT and SIGQUIT). It
	# reads its own status, exec'd: dash blocks every signal around the
	# vfork of a command, and a child reading dash's status could see that.
	(trap '' INT QUIT && ses start "$SX" sig -- sh -c 'exec grep -E "^Sig(Ign|Blk)" /proc/self/status')
	ENDS="$ENDS sig"
	run ses read --until 'SigIgn.*' --wait 10s "$SX" sig
	[ "${lines[0]}" = $'SigBlk:\t0000000000000000' ] || fail "blocked: $output"
	[ "${lines[1]}" = $'SigIgn:\t0000000000000000' ] || fail "ignored: $output"
}

@test "session: a persistent python3 keeps its variables" {
	start py -- python3 -i -q
	run ses read "$SX" py --until '>>> $'
	[ "$output" = '>>> ' ]
	run ses input "$SX" py --until '>>> $' 'x = 41\n'
	[ "$status" -eq 0 ]
	run ses input "$SX" py --until '>>> $' 'print(x + 1)\n'
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = 42 ]
	[ "${lines[2]}" = '>>> ' ]
}

@test "session: Ctrl-C interrupts the foreground command within a second, the shell goes on" {
	start cc
	run ses input "$SX" cc --wait 300ms 'sleep 1234\n'
	[ "$status" -eq 0 ]
	pgrep -f 'sleep 1234' >/dev/null
	t0=$(ms)
	run ses input "$SX" cc --until '\$ $' --timeout 5s '\x03'
	t1=$(ms)
	[ "$status" -eq 0 ]
	[ $((t1 - t0)) -lt 1000 ]
	[[ "$output" == *'^C'* ]]
	run pgrep -f 'sleep 1234'
	[ "$status" -eq 1 ]
	run ses input "$SX" cc 'echo still here\n'
	[ "${lines[1]}" = "still here" ]
}

@test "session: --until returns at the match, before --wait would have" {
	start un
	t0=$(ms)
	# The echo of the input must not match: the output is what does.
	run ses input "$SX" un --wait 5s --until 'DONE' 'sleep 0.3; echo DO""NE\n'
	t1=$(ms)
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\nDONE'* ]]
	[ $((t1 - t0)) -ge 300 ]
	[ $((t1 - t0)) -lt 3000 ]
	# Without --until, the quiet period decides.
	t0=$(ms)
	run ses input "$SX" un --wait 1s 'echo quiet\n'
	t1=$(ms)
	[ $((t1 - t0)) -ge 1000 ]
	[ "${lines[1]}" = quiet ]
}

@test "session: unread output is bounded; a read says what was dropped and keeps the tail" {
	start big
	run ses input "$SX" big --wait 100ms 'sleep 0.5; yes xxxxxxx | head -c 3145728; echo EN""D\n'
	[ "$status" -eq 0 ]
	run --separate-stderr ses read "$SX" big --until $'END\n\\$ $' --timeout 30s
	[ "$status" -eq 0 ]
	[ "${#output}" -le 1048576 ]
	[ "${#output}" -gt 1000000 ]
	[[ "$output" == *$'xxxxxxx\nxxxxxxx\nEND\n$ ' ]]
	[[ "$stderr" =~ ^brig:\ session\ big:\ ([0-9]+)\ bytes\ of\ output\ were\ dropped$ ]]
	[ "${BASH_REMATCH[1]}" -gt 2000000 ]
	# Counted once: the next read drops nothing.
	run --separate-stderr ses read "$SX" big --wait 100ms
	[ -z "$stderr" ]
}

@test "session: ls shows each session's pid, state, unread bytes and command" {
	start l1
	start l2 -- sh -c 'echo done; exit 3'
	for _ in $(seq 50); do
		ses ls "$SX" | grep -q '^l2 .*exited(3)' && break
		sleep 0.1
	done
	run ses ls "$SX"
	[ "$status" -eq 0 ]
	[ "$(squeeze "${lines[0]}")" = "NAME PID STATE UNREAD AGE CMD" ]
	# PID is the sandbox's: the last of the host process's NSpid.
	inside=$(awk '$1 == "NSpid:" { print $NF }' "/proc/$(info l1 pid)/status")
	echo "$output" | grep -Eq "^l1 +$inside +running +[0-9]+ +[0-9]+s +bash --norc --noediting -i$"
	echo "$output" | grep -Eq "^l2 +[0-9]+ +exited\(3\) +5 +[0-9]+s +sh -c echo done; exit 3$"
}

@test "session: the terminal is set before the process runs: its size, and LF without CR" {
	# A command that prints at once sees the session's terminal as every
	# later one does: the holder does not set it after the start.
	start z1 -- sh -c 'stty size; echo first; exit 5'
	for _ in $(seq 50); do
		ses ls "$SX" | grep -q '^z1 .*exited(5)' && break
		sleep 0.1
	done
	run --separate-stderr ses read "$SX" z1
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | od -An -c | tr -s ' ')" = "$(printf '50 500\nfirst' | od -An -c | tr -s ' ')" ] ||
		fail "the first output: $(printf '%s' "$output" | od -An -c)"
	[ "$stderr" = "brig: session z1: exited with status 5" ]
}

@test "session: kill ends the process, its terminal's jobs, the holder and the dir" {
	start k1
	ses input "$SX" k1 --wait 300ms 'sleep 2345\n' >/dev/null
	pid=$(info k1 pid)
	holder=$(info k1 holder)
	run ses kill "$SX" k1
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	wait_gone "$pid"
	wait_gone "$holder"
	run pgrep -f 'sleep 2345'
	[ "$status" -eq 1 ]
	[ ! -e "$BRIG_SANDBOX_DIR/$SX/sessions/k1" ]
	run --separate-stderr ses kill "$SX" k1
	assert_one_line_error "no such session"
}

@test "session: a process that exits is read once, with its status, then gone" {
	start e1 -- sh -c 'echo bye; exit 7'
	holder=$(info e1 holder)
	sleep 0.5
	running "$holder"
	run --separate-stderr ses read "$SX" e1
	[ "$status" -eq 0 ]
	[ "$output" = bye ]
	[ "$stderr" = "brig: session e1: exited with status 7" ]
	wait_gone "$holder"
	[ ! -e "$BRIG_SANDBOX_DIR/$SX/sessions/e1" ]
	run --separate-stderr ses read "$SX" e1
	assert_one_line_error "sandbox session \`e1\`" "no such session"
	# A shell told to exit says so in the same reply.
	start e2
	run --separate-stderr ses input "$SX" e2 'exit 4\n'
	[ "$status" -eq 0 ]
	[ "$stderr" = "brig: session e2: exited with status 4" ]
	[ ! -e "$BRIG_SANDBOX_DIR/$SX/sessions/e2" ]
}

@test "session: a name in use is refused; an exited one's remains are replaced" {
	start u1
	run --separate-stderr ses start "$SX" u1
	assert_one_line_error "sandbox session \`u1\`" "in use"
	running "$(info u1 pid)"
	start u2 -- sh -c 'echo old; exit 1'
	sleep 0.5
	run ses start "$SX" u2 -- sh -c 'echo new; sleep 100'
	[ "$status" -eq 0 ]
	# Until its line: a slow start (a sanitizer build) can outlast the
	# default quiet period of an empty read.
	run ses read --until 'new' --timeout 30s "$SX" u2
	[ "$output" = new ]
}

@test "session: bad names, a missing sandbox, bad options: one line, nothing left" {
	long=$(printf 'a%.0s' $(seq 65))
	for name in ../x .x '' "$long" 'a b' 'a/b'; do
		run --separate-stderr ses start "$SX" "$name"
		assert_one_line_error "invalid session name"
	done
	run --separate-stderr ses start "$SX" "$(printf 'a\033]0;x\a')"
	assert_one_line_error "invalid session name"
	[[ "$stderr" != *$'\033'* ]]
	run --separate-stderr ses start nosuch$$ s
	assert_one_line_error "no sandbox \`nosuch$$\`"
	[ ! -e "$BRIG_SANDBOX_DIR/nosuch$$" ]
	run --separate-stderr ses read "$SX" never
	assert_one_line_error "no such session in sandbox \`$SX\`"
	run --separate-stderr ses start "$SX" bad -u root
	assert_one_line_error "sandbox session \`bad\`" "user"
	run --separate-stderr ses start "$SX" bad -- /no/such/program
	assert_one_line_error "sandbox session \`bad\`" "/no/such/program"
	[ ! -e "$BRIG_SANDBOX_DIR/$SX/sessions/bad" ]
	run pgrep -f "sandbox session start $SX bad"
	[ "$status" -eq 1 ]
	start ok
	run --separate-stderr ses input "$SX" ok '\q'
	assert_one_line_error "CHARS" 'unknown escape `\q` at character 1'
	run --separate-stderr ses input "$SX" ok --until '(' 'x'
	assert_one_line_error "invalid \`until\` regex"
	run --separate-stderr ses input "$SX" ok --wait soon 'x'
	assert_one_line_error "invalid --wait"
}

@test "session: --cwd and --env reach the process" {
	start ce --cwd /tmp -e GREETING=hello -e TERM=vt100
	run ses input "$SX" ce 'echo $GREETING $TERM $PWD\n'
	[ "${lines[1]}" = "hello vt100 /tmp" ]
}

@test "session: a waiting client holds up no other" {
	start w1
	start w2
	ses read "$SX" w1 --until 'NEVER' --timeout 3s >"$BATS_TEST_TMPDIR/w1.out" &
	waiter=$!
	sleep 0.3
	t0=$(ms)
	run ses input "$SX" w2 'echo quick\n'
	[ "${lines[1]}" = quick ]
	run ses ls "$SX"
	echo "$output" | grep -q '^w1 '
	run ses input "$SX" w1 --wait 100ms 'echo meanwhile\n'
	t1=$(ms)
	[ $((t1 - t0)) -lt 2000 ]
	wait "$waiter"
	[ "$(ms)" -ge $((t0 + 2500)) ]
}

@test "session: sandbox rm ends its sessions' holders and leaves nothing" {
	id=sessrm$$
	EXTRA_IDS=$id
	"$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" --network none \
		--data-size 64M "$id"
	ses start "$id" a
	ses start "$id" b -- sleep 1000
	ses input "$id" a --wait 200ms 'sleep 3456 &\n' >/dev/null
	ha=$(info a holder "$id")
	hb=$(info b holder "$id")
	running "$ha"
	running "$hb"
	"$BRIG" --root "$SB_ROOT" sandbox rm "$id"
	wait_gone "$ha"
	wait_gone "$hb"
	[ ! -e "$BRIG_SANDBOX_DIR/$id" ]
	run pgrep -f "sandbox session start $id "
	[ "$status" -eq 1 ]
	run pgrep -f 'sleep 3456'
	[ "$status" -eq 1 ]
}
