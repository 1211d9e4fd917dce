#!/usr/bin/env bats
# `brig run`: create + start + wait, with the container's exit status.

load helpers

@test "run prints what the container prints" {
	set_args echo hello
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
}

@test "run passes stdin to the container" {
	set_args cat
	run bash -c 'echo "from stdin" | "$@"' _ "$BRIG" --root "$ROOT" run -b "$BUNDLE" "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "from stdin" ]
}

@test "run exits with the container's exit status" {
	for code in 0 1 42; do
		set_args sh -c "exit $code"
		run brig run "$CID-$code"
		[ "$status" -eq "$code" ] || fail "exit $code gave $status"
	done
}

@test "run exits 128+9 when the container is killed by SIGKILL" {
	set_args sleep 100
	brig run "$CID" </dev/null >"$CT_OUT" 2>&1 &
	pid=$!
	wait_for_status "$CID" running
	brig kill "$CID" KILL
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 137 ]
}

@test "run exits 128+N when the process kills itself with signal N" {
	# Without a pid namespace the process is not an init, so it can die
	# of its own signal.
	update_config '.linux.namespaces |= map(select(.type != "pid"))'
	set_args sh -c 'kill -9 $$'
	run brig run "$CID"
	[ "$status" -eq 137 ]
}

@test "run removes the container once it exits" {
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
	run brig state "$CID"
	[ "$status" -ne 0 ]
}

@test "run --keep leaves a stopped container to delete" {
	set_args sh -c 'exit 3'
	run brig run --keep "$CID"
	[ "$status" -eq 3 ]
	run brig state "$CID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = stopped ]
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
}

@test "the container sees the environment from the config" {
	update_config '.process.env += ["GREETING=hi there", "EMPTY="]'
	set_args sh -c 'echo "$GREETING|${EMPTY-unset}|$PATH"'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == "hi there||"*/bin* ]]
}

@test "the container does not inherit brig's environment" {
	set_args sh -c 'echo "${HOST_ONLY-unset}"'
	HOST_ONLY=leak run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = unset ]
}

@test "the container starts in process.cwd" {
	update_config '.process.cwd = "/tmp"'
	set_args pwd
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = /tmp ]
}

@test "args[0] is looked up in the container's PATH" {
	set_args busybox echo found
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = found ]

	update_config '.process.env = (.process.env | map(select(startswith("PATH=") | not))) + ["PATH=/nowhere:/bin"]'
	set_args echo via-path
	run brig run "$CID-2"
	[ "$status" -eq 0 ]
	[ "$output" = via-path ]
}

@test "args[0] can be an absolute path" {
	set_args /bin/echo absolute
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = absolute ]
}

@test "run --detach returns at once and leaves the container running" {
	set_args sleep 100
	run brig_detached run --detach "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running

	run brig kill "$CID" KILL
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped

	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
}

@test "run -d is a short form of --detach" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
}

@test "a detached container's output goes to the caller's stdout" {
	set_args echo detached-output
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	[ "$(cat "$CT_OUT")" = detached-output ]
}

@test "run --pid-file writes the container's pid" {
	set_args sleep 100
	run brig_detached run -d --pid-file "$BATS_TEST_TMPDIR/pid" "$CID"
	[ "$status" -eq 0 ]
	[ -s "$BATS_TEST_TMPDIR/pid" ]
	pid=$(cat "$BATS_TEST_TMPDIR/pid")
	[[ "$pid" =~ ^[0-9]+$ ]]
	[ "$pid" = "$(container_pid "$CID")" ]
	kill -0 "$pid"
}

@test "run --bundle takes an absolute path" {
	set_args sleep 100
	cd /
	run brig_detached run -d --bundle "$BUNDLE" "$CID"
	[ "$status" -eq 0 ]
	[ "$(brig state "$CID" | jq -r .bundle)" = "$BUNDLE" ]
}

@test "run --bundle takes a relative path and state shows it absolute" {
	set_args sleep 100
	cd "$BATS_TEST_TMPDIR"
	run brig_detached run -d -b bundle "$CID"
	[ "$status" -eq 0 ]
	[ "$(brig state "$CID" | jq -r .bundle)" = "$BUNDLE" ]
}

@test "run without --bundle uses the current directory" {
	set_args echo from-cwd
	cd "$BUNDLE"
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = from-cwd ]
}

@test "run --no-pivot runs the container" {
	set_args sh -c 'echo no-pivot; ls /bin/busybox'
	run brig run --no-pivot "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = no-pivot ]
	[ "${lines[1]}" = /bin/busybox ]
}

@test "run --no-new-keyring runs the container" {
	set_args echo keyring
	run brig run --no-new-keyring "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = keyring ]
}

@test "run --preserve-fds 1 passes fd 3 into the container" {
	echo "through fd 3" >"$BATS_TEST_TMPDIR/extra"
	set_args sh -c 'cat <&3'
	run brig run --preserve-fds 1 "$CID" 3<"$BATS_TEST_TMPDIR/extra"
	[ "$status" -eq 0 ]
	[ "$output" = "through fd 3" ]
}

@test "without --preserve-fds, fd 3 is not passed into the container" {
	echo secret >"$BATS_TEST_TMPDIR/extra"
	set_args sh -c 'if [ -e /proc/self/fd/3 ]; then echo open; else echo closed; fi'
	run brig run "$CID" 3<"$BATS_TEST_TMPDIR/extra"
	[ "$status" -eq 0 ]
	[ "$output" = closed ]
}

@test "run forwards SIGTERM to the container, which exits 143" {
	set_args sh -c 'trap "echo got TERM; exit 143" TERM; echo ready; sleep 100 & wait'
	# Not through the brig() wrapper: the signal must reach brig itself.
	BRIG_TEST_MARK=$MARK "$BRIG" --root "$ROOT" run -b "$BUNDLE" "$CID" \
		</dev/null >"$CT_OUT" 2>"$CT_ERR" &
	pid=$!
	wait_for_file "$CT_OUT"
	[ "$(head -1 "$CT_OUT")" = ready ]

	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 143 ]
	grep -qx "got TERM" "$CT_OUT"
}

@test "run forwards other signals too (USR1, HUP)" {
	set_args sh -c 'trap "echo got USR1" USR1; trap "echo got HUP; exit 0" HUP; echo ready; while :; do sleep 0.1; done'
	BRIG_TEST_MARK=$MARK "$BRIG" --root "$ROOT" run -b "$BUNDLE" "$CID" \
		</dev/null >"$CT_OUT" 2>"$CT_ERR" &
	pid=$!
	wait_for_file "$CT_OUT"
	kill -USR1 "$pid"
	for _ in $(seq 50); do grep -q "got USR1" "$CT_OUT" && break; sleep 0.1; done
	kill -HUP "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	grep -qx "got USR1" "$CT_OUT"
	grep -qx "got HUP" "$CT_OUT"
}

@test "socket activation: LISTEN_FDS fds come first, announced to the process" {
	echo listen-sock >"$BATS_TEST_TMPDIR/l3"
	echo preserved >"$BATS_TEST_TMPDIR/l4"
	set_args sh -c 'echo "$LISTEN_FDS $LISTEN_PID"; cat <&3; cat <&4'
	# LISTEN_PID must be brig's own pid: the shell execs brig in place.
	run bash -c 'exec 3<"$1" 4<"$2"; shift 2; LISTEN_FDS=1 LISTEN_PID=$$ exec "$@"' _ \
		"$BATS_TEST_TMPDIR/l3" "$BATS_TEST_TMPDIR/l4" \
		env BRIG_TEST_MARK="$MARK" "$BRIG" --root "$ROOT" run --preserve-fds 1 "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "1 1" ]
	[ "${lines[1]}" = listen-sock ]
	[ "${lines[2]}" = preserved ]
}

@test "LISTEN_FDS meant for another process is ignored" {
	set_args sh -c 'echo "[$LISTEN_FDS]"'
	run env LISTEN_FDS=2 LISTEN_PID=1 "$BRIG" --root "$ROOT" run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "[]" ]
}

@test "run -t gives the process a terminal even when the config says no" {
	set_args sh -c 'tty'
	run brig run -t "$CID" </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == */dev/pts/* ]] || fail "output: $output"
}

@test "no fd of the caller or the runtime reaches the container's process" {
	set_args ls /proc/self/fd
	run bash -c 'exec 5</dev/null 8>/dev/null; "$@"' _ env BRIG_TEST_MARK="$MARK" "$BRIG" --root "$ROOT" run "$CID"
	[ "$status" -eq 0 ]
	# 0, 1, 2 and the directory ls reads.
	[ "$(wc -w <<<"$output")" -le 4 ] || fail "fds: $(tr '\n' ' ' <<<"$output")"
	for fd in $output; do
		[ "$fd" -le 3 ] || fail "fd $fd leaked into the container"
	done
}
