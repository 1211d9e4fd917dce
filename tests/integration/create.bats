#!/usr/bin/env bats
# `brig create` then `brig start`: the two-step lifecycle.

load helpers

setup() {
	setup_bundle
	SHARED=$BATS_TEST_TMPDIR/shared
	mkdir -p "$SHARED"
	add_bind_mount "$SHARED" /shared
}

@test "create leaves the container created, its init blocked before exec" {
	set_args sh -c 'echo started >/shared/marker; sleep 100'
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	[ "$(container_status "$CID")" = created ]

	pid=$(container_pid "$CID")
	[[ "$pid" =~ ^[0-9]+$ ]] && [ "$pid" -gt 0 ]
	kill -0 "$pid"
	# It has not exec'd the container's process yet.
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" != "sh -c "* ]]
	[ ! -e "$SHARED/marker" ]
	# Self-check of the harness: teardown can see this container's processes.
	[ -n "$(marked_pids)" ]
}

@test "start runs the process of a created container" {
	set_args sh -c 'echo started >/shared/marker; exec sleep 100'
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	pid=$(container_pid "$CID")

	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	wait_for_file "$SHARED/marker"
	[ "$(cat "$SHARED/marker")" = started ]
	# The same process, now running the container's args.
	[ "$(container_pid "$CID")" = "$pid" ]
	[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep 100 " ]
}

@test "a started container that exits becomes stopped" {
	set_args sh -c 'echo done >/shared/marker'
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	[ "$(cat "$SHARED/marker")" = done ]
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
}

@test "the container's output goes to the stdout given to create" {
	set_args echo hello-from-create
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	[ "$(cat "$CT_OUT")" = hello-from-create ]
}

@test "start twice fails the second time" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running

	run --separate-stderr brig start "$CID"
	assert_one_line_error
	[ "$(container_status "$CID")" = running ]
}

@test "start of a stopped container fails" {
	set_args true
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	run --separate-stderr brig start "$CID"
	assert_one_line_error
}

@test "start of a container that does not exist fails" {
	run --separate-stderr brig start nosuch
	assert_one_line_error brig:nosuch
}

@test "create --pid-file writes the init's pid" {
	set_args sleep 100
	run brig_detached create --pid-file "$BATS_TEST_TMPDIR/pid" "$CID"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$(container_pid "$CID")" ]
	kill -0 "$(cat "$BATS_TEST_TMPDIR/pid")"
}

@test "create --pid-file takes a relative path" {
	set_args sleep 100
	run brig_detached create --pid-file pidfile "$CID"
	[ "$status" -eq 0 ]
	[ "$(cat "$BUNDLE/pidfile")" = "$(container_pid "$CID")" ]
}

@test "create --bundle from another directory" {
	set_args sleep 100
	cd /
	run brig_detached create --bundle "$BUNDLE" "$CID"
	[ "$status" -eq 0 ]
	[ "$(brig state "$CID" | jq -r .bundle)" = "$BUNDLE" ]
}

@test "create accepts --no-pivot and --no-new-keyring" {
	set_args sh -c 'echo ok >/shared/marker'
	run brig_detached create --no-pivot --no-new-keyring "$CID"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_file "$SHARED/marker"
}

@test "create --preserve-fds passes the extra fd to the started process" {
	echo "fd three" >"$BATS_TEST_TMPDIR/extra"
	set_args sh -c 'cat <&3 >/shared/marker'
	run brig_detached create --preserve-fds 1 "$CID" 3<"$BATS_TEST_TMPDIR/extra"
	[ "$status" -eq 0 ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_file "$SHARED/marker"
	[ "$(cat "$SHARED/marker")" = "fd three" ]
}

@test "the blocked init of a created container can be killed and deleted" {
	set_args sh -c 'echo started >/shared/marker'
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	pid=$(container_pid "$CID")

	run brig kill "$CID" KILL
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
	[ ! -e "$SHARED/marker" ]
	for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	refute kill -0 "$pid" 2>/dev/null
}

@test "delete of a created container removes it without running it" {
	set_args sh -c 'echo started >/shared/marker'
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$CID" ]
	[ ! -e "$SHARED/marker" ]
	assert_no_leftovers "$CID"
}

@test "two containers from two bundles live side by side" {
	set_args sleep 100
	run brig_detached create "$CID-a"
	[ "$status" -eq 0 ]
	run brig_detached create "$CID-b"
	[ "$status" -eq 0 ]
	[ "$(container_pid "$CID-a")" != "$(container_pid "$CID-b")" ]
	run brig start "$CID-b"
	[ "$status" -eq 0 ]
	wait_for_status "$CID-b" running
	[ "$(container_status "$CID-a")" = created ]
}
