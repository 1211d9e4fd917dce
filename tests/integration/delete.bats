#!/usr/bin/env bats
# `brig delete`: removes every trace of a container.

load helpers

@test "delete of a stopped container removes its state and mounts" {
	set_args true
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	[ -d "$ROOT/$CID" ]

	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
	[ -z "$(grep -F "$BUNDLE" /proc/self/mountinfo)" ]
	run brig state "$CID"
	[ "$status" -ne 0 ]
	assert_no_leftovers "$CID"
}

@test "delete leaves the bundle as it was" {
	set_args true
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ -f "$BUNDLE/config.json" ]
	[ -x "$ROOTFS/bin/busybox" ]
	[ -f "$ROOTFS/etc/passwd" ]
}

@test "delete of a running container without --force fails and leaves it running" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	pid=$(container_pid "$CID")

	run --separate-stderr brig delete "$CID"
	assert_one_line_error brig:running
	[ "$(container_status "$CID")" = running ]
	kill -0 "$pid"
	[ -d "$ROOT/$CID" ]
}

@test "delete --force kills a running container and removes it" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	pid=$(container_pid "$CID")

	run brig delete --force "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
	for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	refute kill -0 "$pid" 2>/dev/null
	assert_no_leftovers "$CID"
}

@test "delete -f kills a container that ignores SIGTERM" {
	set_args sh -c 'trap "" TERM; echo ready; while :; do sleep 0.1; done'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" ready
	run brig delete -f "$CID"
	[ "$status" -eq 0 ]
	assert_no_leftovers "$CID"
}

@test "delete --force of a created container removes it" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig delete --force "$CID"
	[ "$status" -eq 0 ]
	assert_no_leftovers "$CID"
}

@test "delete of a container that does not exist fails" {
	run --separate-stderr brig delete nosuch
	assert_one_line_error brig:nosuch
}

@test "delete --force of a container that does not exist succeeds" {
	# As with runc: callers use it to make sure a container is gone.
	run brig delete --force nosuch
	[ "$status" -eq 0 ]
}

@test "delete --force cleans a state directory left half-made" {
	mkdir -p "$ROOT/$CID"
	run brig delete --force "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
}

@test "an id can be used again once deleted" {
	set_args echo first
	run brig run --keep "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = first ]
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	set_args echo second
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = second ]
}

@test "delete of one container leaves the others alone" {
	set_args sleep 100
	run brig_detached run -d "$CID-a"
	[ "$status" -eq 0 ]
	run brig_detached run -d "$CID-b"
	[ "$status" -eq 0 ]
	run brig delete --force "$CID-a"
	[ "$status" -eq 0 ]
	[ "$(container_status "$CID-b")" = running ]
	run brig list -q
	[ "$output" = "$CID-b" ]
}

@test "a create killed half-way leaves nothing that delete --force cannot clean" {
	hook=$BATS_TEST_TMPDIR/slow-hook
	printf '#!/bin/sh\necho started >%s/hook-started\nexec sleep 37\n' "$BATS_TEST_TMPDIR" >"$hook"
	chmod +x "$hook"
	update_config '.hooks.createRuntime = [{path: $p}]' --arg p "$hook"
	set_args sleep 100
	brig create -b "$BUNDLE" "$CID" </dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/create.err" &
	create_pid=$!
	wait_for_file "$BATS_TEST_TMPDIR/hook-started" || fail "hook did not start: $(cat "$BATS_TEST_TMPDIR/create.err")"
	# The runtime itself dies (not just the wrapper around it), mid-create.
	pkill -9 -f -- "--root $ROOT create" || fail "no brig create to kill"
	wait "$create_pid" || true
	# The orphaned hook (exec'd into a distinctive sleep) goes too.
	pkill -x -f "sleep 37" || true
	# The half-made container is listed, and delete --force removes it all.
	[ "$(container_status "$CID")" = creating ]
	brig delete --force "$CID"
	assert_no_leftovers "$CID"
}
