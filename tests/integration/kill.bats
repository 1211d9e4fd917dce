#!/usr/bin/env bats
# `brig kill ID [SIGNAL]`: signals to the container's process.

load helpers

# A container that reports the signals it gets on stdout ($CT_OUT) and exits
# on TERM with status 143.
start_trapping_container() {
	set_args sh -c '
		for sig in USR1 USR2 HUP INT; do trap "echo got $sig" $sig; done
		trap "echo got TERM; exit 143" TERM
		echo ready
		while :; do sleep 0.1; done'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" ready
}

@test "kill sends SIGTERM by default" {
	start_trapping_container
	run brig kill "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	grep -qx "got TERM" "$CT_OUT"
}

@test "kill takes a signal name without SIG" {
	start_trapping_container
	run brig kill "$CID" TERM
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	grep -qx "got TERM" "$CT_OUT"
}

@test "kill takes a signal name with SIG" {
	start_trapping_container
	run brig kill "$CID" SIGUSR2
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "got USR2"
	[ "$(container_status "$CID")" = running ]
}

@test "kill takes a signal number" {
	start_trapping_container
	run brig kill "$CID" 15
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	grep -qx "got TERM" "$CT_OUT"
}

@test "kill KILL stops a container that ignores TERM" {
	set_args sh -c 'trap "" TERM; echo ready; while :; do sleep 0.1; done'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" ready
	run brig kill "$CID" KILL
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
}

@test "kill SIGKILL and kill 9 are the same as KILL" {
	set_args sleep 100
	run brig_detached run -d "$CID-a"
	[ "$status" -eq 0 ]
	run brig_detached run -d "$CID-b"
	[ "$status" -eq 0 ]
	run brig kill "$CID-a" SIGKILL
	[ "$status" -eq 0 ]
	run brig kill "$CID-b" 9
	[ "$status" -eq 0 ]
	wait_for_status "$CID-a" stopped
	wait_for_status "$CID-b" stopped
}

@test "kill USR1 reaches a trap and the container keeps running" {
	start_trapping_container
	run brig kill "$CID" USR1
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "got USR1"
	run brig kill "$CID" HUP
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "got HUP"
	[ "$(container_status "$CID")" = running ]
}

@test "kill with an unknown signal fails and the container still runs" {
	start_trapping_container
	for sig in NOSUCHSIG SIGNOPE 0x1 99999; do
		run --separate-stderr brig kill "$CID" "$sig"
		[ "$status" -ne 0 ] || fail "kill $sig succeeded"
		assert_one_line_error brig:"$sig"
	done
	[ "$(container_status "$CID")" = running ]
	refute grep -q "^got" "$CT_OUT"
}

@test "kill with signal 0 checks that the container is alive, --all too, and signals nothing" {
	start_trapping_container
	run brig kill "$CID" 0
	[ "$status" -eq 0 ] || fail "kill 0 of a running container: $output"
	run brig kill --all "$CID" 0
	[ "$status" -eq 0 ] || fail "kill --all 0 of a running container: $output"
	[ "$(container_status "$CID")" = running ]
	refute grep -q "^got" "$CT_OUT"
	run brig kill "$CID" KILL
	wait_for_status "$CID" stopped
	run --separate-stderr brig kill "$CID" 0
	[ "$status" -ne 0 ] || fail "kill 0 of a stopped container succeeded"
	assert_one_line_error "$CID" brig:stopped
}

@test "kill --all signals every process of the container" {
	set_args sh -c '
		trap "echo init got USR1" USR1
		sh -c "trap \"echo child got USR1\" USR1; echo child ready; while :; do sleep 0.1; done" &
		echo init ready
		while :; do sleep 0.1; done'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "init ready"
	wait_for_line "$CT_OUT" "child ready"

	run brig kill --all "$CID" USR1
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "init got USR1"
	wait_for_line "$CT_OUT" "child got USR1"
}

@test "kill without --all signals only the init" {
	set_args sh -c '
		trap "echo init got USR1" USR1
		sh -c "trap \"echo child got USR1\" USR1; echo child ready; while :; do sleep 0.1; done" &
		echo init ready
		while :; do sleep 0.1; done'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "child ready"
	wait_for_line "$CT_OUT" "init ready"

	run brig kill "$CID" USR1
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" "init got USR1"
	sleep 0.3
	refute grep -qx "child got USR1" "$CT_OUT"
}

@test "kill -a KILL stops the container" {
	set_args sh -c 'sleep 100 & sleep 100 & wait'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	run brig kill -a "$CID" KILL
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
}

@test "kill of a stopped container fails" {
	set_args true
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	run --separate-stderr brig kill "$CID" KILL
	assert_one_line_error
}

@test "kill of a container that does not exist fails" {
	run --separate-stderr brig kill nosuch KILL
	assert_one_line_error brig:nosuch
}
