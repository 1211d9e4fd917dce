#!/usr/bin/env bats
# process.terminal: a pty from the container's own devpts, handed to
# --console-socket (tests/tools/recvtty is the receiving end) or relayed by
# `run` in the foreground.

load helpers

RECVTTY=${RECVTTY:-$(dirname "$BRIG")/tests/tools/recvtty}

setup() {
	setup_bundle
	[ -x "$RECVTTY" ] || fail "no recvtty at $RECVTTY (make builds it)"
	update_config '.process.terminal = true'
	SOCK=$BATS_TEST_TMPDIR/console.sock
}

# start_recvtty [INPUT]: receives the master into $BATS_TEST_TMPDIR/tty.out.
start_recvtty() {
	"$RECVTTY" "$SOCK" "$@" >"$BATS_TEST_TMPDIR/tty.out" 2>"$BATS_TEST_TMPDIR/tty.err" &
	RECV_PID=$!
	for _ in $(seq 50); do
		[ -S "$SOCK" ] && return 0
		sleep 0.1
	done
	fail "recvtty did not listen on $SOCK"
}

# run_on_tty [INPUT]: the container created with its pty sent to recvtty
# (fed INPUT) and started; what the pty showed, without CRs, in $out.
run_on_tty() {
	start_recvtty "$@"
	brig_detached create --console-socket "$SOCK" -b "$BUNDLE" "$CID"
	brig start "$CID"
	wait "$RECV_PID"
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
}

@test "create --console-socket hands the pty master to the socket" {
	set_args sh -c 'tty; echo cols=$(stty size)'
	update_config '.process.consoleSize = {height: 33, width: 111}'
	start_recvtty
	brig_detached create --console-socket "$SOCK" -b "$BUNDLE" "$CID"
	grep -q "got master" "$BATS_TEST_TMPDIR/tty.err"
	brig start "$CID"
	wait "$RECV_PID"
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
	[[ "$out" == */dev/pts/0* ]] || fail "tty said: $out"
	[[ "$out" == *"cols=33 111"* ]] || fail "window size: $out"
}

@test "input written to the master reaches the process and is echoed" {
	set_args sh -c 'read line; echo "got:$line"'
	run_on_tty $'hello-pty\n'
	# The pty echoes what was typed, then the process answers.
	[[ "$out" == *"hello-pty"*"got:hello-pty"* ]] || fail "output: $out"
}

@test "the pty is the process's controlling terminal and its stdio" {
	set_args sh -c 'ls -l /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2; cat /proc/self/stat'
	run_on_tty
	[ "$(grep -c -- '-> /dev/pts/0' <<<"$out")" -eq 3 ] || fail "stdio: $out"
	# Field 7 of stat is tty_nr: non-zero means a controlling terminal.
	tty_nr=$(grep -o ') .*' <<<"$out" | awk '{print $6}')
	[ "$tty_nr" != 0 ] || fail "no controlling terminal: $out"
}

@test "the pty belongs to the process's user and to the tty group (devpts gid=5), mode 620" {
	update_config '.process.user = {uid: 1000, gid: 1000}'
	set_args sh -c 'stat -c "%u %g %a" "$(tty)"'
	run_on_tty
	[ "$out" = "1000 5 620" ] || fail "the pty: $out"
}

@test "run relays the terminal in the foreground and exits with the status" {
	set_args sh -c 'tty; exit 6'
	run brig run -b "$BUNDLE" "$CID" </dev/null
	[ "$status" -eq 6 ]
	[[ "$output" == */dev/pts/0* ]] || fail "output: $output"
}

@test "run relays what is typed to the process" {
	set_args sh -c 'read a; echo "answer:$a"'
	run bash -c 'printf "42\n" | "$@"' _ "$BRIG" --root "$ROOT" run -b "$BUNDLE" "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"answer:42"* ]] || fail "output: $output"
}

@test "create with terminal true and no console socket fails and leaves nothing" {
	set_args true
	run --separate-stderr brig create -b "$BUNDLE" "$CID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *console-socket* ]] || fail "stderr: $stderr"
	[ "${#stderr_lines[@]}" -eq 1 ]
	assert_no_leftovers "$CID"
}

@test "a console socket that nobody listens on fails create and leaves nothing" {
	set_args true
	run --separate-stderr brig create --console-socket "$BATS_TEST_TMPDIR/nobody.sock" -b "$BUNDLE" "$CID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *nobody.sock* ]] || fail "stderr: $stderr"
	assert_no_leftovers "$CID"
}

@test "--console-socket without process.terminal is refused" {
	update_config '.process.terminal = false'
	set_args true
	start_recvtty
	run --separate-stderr brig create --console-socket "$SOCK" -b "$BUNDLE" "$CID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *terminal* ]] || fail "stderr: $stderr"
	kill "$RECV_PID" 2>/dev/null || true
	assert_no_leftovers "$CID"
}
