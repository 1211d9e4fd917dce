#!/usr/bin/env bats
# Bad input: each case fails with a non-zero status and one line on stderr
# that names the problem, and leaves no state directory, mount or process.

load helpers

# expect_create_failure KEYWORD...: `create` and `run` both fail cleanly.
expect_create_failure() {
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error "$@"
	assert_no_leftovers "$CID"

	run --separate-stderr brig_detached run "$CID"
	assert_one_line_error "$@"
	assert_no_leftovers "$CID"
}

@test "malformed JSON in config.json" {
	printf '{"ociVersion": "1.0.2", "process": {' >"$BUNDLE/config.json"
	expect_create_failure brig:config.json
}

@test "config.json that is not a JSON object" {
	echo '["not", "an", "object"]' >"$BUNDLE/config.json"
	expect_create_failure brig:config.json
}

@test "config.json nested deep enough to overflow a recursive parser" {
	# 300000 levels used to crash brig (stack overflow in the JSON library).
	{
		printf '{"ociVersion": "1.0.2", "process": '
		head -c 300000 /dev/zero | tr '\0' '['
		head -c 300000 /dev/zero | tr '\0' ']'
		printf '}'
	} >"$BUNDLE/config.json"
	expect_create_failure brig:config.json "brig:nested more than 64 levels"
}

@test "no config.json in the bundle" {
	rm "$BUNDLE/config.json"
	expect_create_failure config.json
}

@test "a field of the wrong type: process.args is a string" {
	update_config '.process.args = "sh"'
	expect_create_failure process.args
}

@test "a field of the wrong type: process.user.uid is a string" {
	update_config '.process.user.uid = "root"'
	expect_create_failure brig:process.user.uid
}

@test "a field of the wrong type: linux.namespaces is an object" {
	update_config '.linux.namespaces = {"type": "pid"}'
	expect_create_failure brig:linux.namespaces
}

@test "ociVersion is missing" {
	# brig-specific: runc 1.1 does not check ociVersion.
	update_config 'del(.ociVersion)'
	expect_create_failure ociVersion
}

@test "root is missing" {
	update_config 'del(.root)'
	expect_create_failure root
}

@test "process.args is missing" {
	update_config 'del(.process.args)'
	expect_create_failure args
}

@test "process.args is empty" {
	update_config '.process.args = []'
	expect_create_failure args
}

@test "the rootfs does not exist" {
	update_config '.root.path = "no-such-rootfs"'
	expect_create_failure no-such-rootfs
}

@test "an unknown namespace type" {
	update_config '.linux.namespaces += [{"type": "bogus"}]'
	expect_create_failure bogus
}

@test "a bind mount whose source does not exist" {
	add_bind_mount /no/such/source /data
	expect_create_failure /no/such/source
}

@test "a mount of an unknown filesystem type" {
	add_mount /data no-such-fs none
	expect_create_failure brig:no-such-fs
}

@test "a mount option brig refuses is reported from the plan, before the clone" {
	n=$(jq '.mounts | length' "$BUNDLE/config.json")
	add_bind_mount "$BATS_TEST_TMPDIR" /data idmap
	# The runtime's plan names the field; the init would name the mount.
	expect_create_failure "brig:config.json: mounts[$n].options" brig:idmap
}

@test "a device number the kernel cannot hold is reported from the plan" {
	update_config '.linux.devices = [{type: "c", path: "/dev/big", major: 5000, minor: 1}]'
	expect_create_failure "brig:config.json: linux.devices[0]" brig:5000:1
}

@test "an empty container id" {
	run --separate-stderr brig_detached create ""
	assert_one_line_error brig:id
	assert_no_leftovers ""
}

@test "a container id with a slash" {
	run --separate-stderr brig_detached create "a/b"
	assert_one_line_error brig:a/b
	[ ! -e "$ROOT/a" ]
	assert_no_leftovers "a/b"
}

@test "a container id that is .. or ." {
	for id in .. .; do
		run --separate-stderr brig_detached create "$id"
		assert_one_line_error brig:"$id"
		assert_no_leftovers "$id"
	done
}

@test "a container id that already exists" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	pid=$(container_pid "$CID")

	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error brig:"$CID"
	run --separate-stderr brig_detached run "$CID"
	assert_one_line_error brig:"$CID"
	# The first container is untouched.
	[ "$(container_status "$CID")" = created ]
	[ "$(container_pid "$CID")" = "$pid" ]
}

@test "a mount destination that is a symlink out of the rootfs writes nothing outside" {
	OUTSIDE=/tmp/outside-$RANDOM-$$
	ln -s "$OUTSIDE" "$ROOTFS/escape"
	add_mount /escape tmpfs tmpfs
	update_config '.root.readonly = false'
	set_args sh -c 'touch /escape/x'
	run brig run "$CID"
	# Refused, or resolved inside the rootfs: either way, not on the host.
	[ ! -e "$OUTSIDE" ] || { rm -rf "$OUTSIDE"; fail "created $OUTSIDE on the host"; }
	refute grep -qF " $OUTSIDE " /proc/self/mountinfo
	assert_no_leftovers "$CID"
}

@test "an args[0] not found in the container" {
	set_args no-such-binary
	expect_create_failure no-such-binary
}

@test "kill with an unknown signal" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	run --separate-stderr brig kill "$CID" SIGWHATEVER
	assert_one_line_error brig:SIGWHATEVER
	[ "$(container_status "$CID")" = running ]
}

@test "start on a running container" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	run --separate-stderr brig start "$CID"
	assert_one_line_error brig:running
	[ "$(container_status "$CID")" = running ]
}

@test "delete on a running container without --force" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	run --separate-stderr brig delete "$CID"
	assert_one_line_error brig:running
	[ "$(container_status "$CID")" = running ]
}

@test "a --bundle that does not exist" {
	run --separate-stderr brig_detached create --bundle /no/such/bundle "$CID"
	assert_one_line_error /no/such/bundle
	assert_no_leftovers "$CID"
}

@test "a --preserve-fds that is not a number" {
	run --separate-stderr brig_detached create --preserve-fds many "$CID"
	assert_one_line_error many
	assert_no_leftovers "$CID"
}

@test "an unknown --log-format" {
	run --separate-stderr brig --log-format xml list
	assert_one_line_error xml
}

@test "--systemd-cgroup where systemd is not the init: one line, nothing left" {
	# systemd.bats tests the driver where systemd is PID 1
	[ ! -d /run/systemd/system ] || skip "systemd is this host's init"
	update_config '.linux.cgroupsPath = $p' --arg p "system.slice:brigtest:$CID"
	run --separate-stderr brig_detached --systemd-cgroup run -d "$CID"
	assert_one_line_error "brig:systemd is not this host's init"
	assert_no_leftovers "$CID"
	[ -z "$(find /sys/fs/cgroup -maxdepth 3 -name "brigtest-$CID.scope" 2>/dev/null)" ]
}
