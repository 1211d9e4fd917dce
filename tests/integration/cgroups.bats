#!/usr/bin/env bats
# cgroup v2 without limits: the container's own cgroup, its namespace,
# pause/resume, ps, kill --all, events, devices, clean-up, and the error for
# a controller the host doesn't have. Runs on any host with a cgroup v2
# hierarchy (the unified one of a hybrid host will do); the limits
# themselves are in cgroups_limits.bats, which needs the controllers.

load helpers

@test "the container runs in a cgroup of its own, which it sees as /" {
	set_args sh -c 'grep "^0::" /proc/self/cgroup; sleep 100'
	brig_detached run -d "$CID"
	wait_for_line "$CT_OUT" "0::/"
	cg=$(container_cgroup "$CID")
	[ -d "$cg" ] || fail "no cgroup dir $cg"
	[[ "$cg" == "$(cgroup_v2_root)/"* ]] || fail "cgroup $cg is outside the v2 hierarchy"
	grep -qx "$(container_pid "$CID")" "$cg/cgroup.procs"
}

@test "an absolute cgroupsPath is taken from the cgroup root" {
	update_config '.linux.cgroupsPath = $p' --arg p "/brigtest/$CID"
	set_args sleep 100
	brig_detached run -d "$CID"
	[ "$(container_cgroup "$CID")" = "$(cgroup_v2_root)/brigtest/$CID" ]
	brig delete -f "$CID"
	[ ! -e "$(cgroup_v2_root)/brigtest/$CID" ]
	rmdir "$(cgroup_v2_root)/brigtest"
}

@test "a cgroupsPath cannot climb out of the cgroup root" {
	update_config '.linux.cgroupsPath = "/../../../tmp/brig-escape"'
	set_args true
	brig run "$CID" || true
	[ ! -e /tmp/brig-escape ]
	[ ! -e /sys/fs/brig-escape ]
}

@test "delete removes the container's cgroup" {
	set_args sleep 100
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ -d "$cg" ]
	brig delete -f "$CID"
	[ ! -e "$cg" ] || fail "cgroup $cg left behind"
}

@test "pause freezes the container and resume lets it go on" {
	mkdir -p "$BATS_TEST_TMPDIR/count"
	add_bind_mount "$BATS_TEST_TMPDIR/count" /count
	# Replaced whole (mv): a reader on the host never sees the file empty.
	set_args sh -c 'i=0; while true; do i=$((i+1)); echo $i >/count/n.new; mv /count/n.new /count/n; sleep 0.1; done'
	brig_detached run -d "$CID"
	wait_for_file "$BATS_TEST_TMPDIR/count/n"
	brig pause "$CID"
	[ "$(container_status "$CID")" = paused ]
	grep -qx "frozen 1" "$(container_cgroup "$CID")/cgroup.events"
	a=$(cat "$BATS_TEST_TMPDIR/count/n")
	sleep 1
	b=$(cat "$BATS_TEST_TMPDIR/count/n")
	[ "$a" = "$b" ] || fail "the counter moved while paused: $a -> $b"
	brig resume "$CID"
	[ "$(container_status "$CID")" = running ]
	sleep 1
	c=$(cat "$BATS_TEST_TMPDIR/count/n")
	[ "$c" -gt "$b" ] || fail "the counter did not go on after resume: $b -> $c"
}

@test "pause of a paused container and resume of a running one fail" {
	set_args sleep 100
	brig_detached run -d "$CID"
	run --separate-stderr brig resume "$CID"
	assert_one_line_error running
	brig pause "$CID"
	run --separate-stderr brig pause "$CID"
	assert_one_line_error paused
}

@test "a paused container can be deleted with --force" {
	set_args sleep 100
	brig_detached run -d "$CID"
	brig pause "$CID"
	cg=$(container_cgroup "$CID")
	brig delete -f "$CID"
	[ ! -e "$cg" ]
	assert_no_leftovers "$CID"
}

@test "ps lists the container's processes, in a table and as JSON" {
	set_args sh -c 'sleep 100 & sleep 100 & wait'
	brig_detached run -d "$CID"
	for _ in $(seq 50); do
		[ "$(brig ps -f json "$CID" | jq length)" -eq 3 ] && break
		sleep 0.1
	done
	run brig ps -f json "$CID"
	[ "$status" -eq 0 ]
	[ "$(jq length <<<"$output")" -eq 3 ]
	init=$(container_pid "$CID")
	jq -e --argjson p "$init" 'index($p) != null' <<<"$output" >/dev/null
	run brig ps "$CID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *PID* ]]
	[ "$(grep -c ' sleep 100$' <<<"$output")" -eq 2 ] || fail "table: $output"
	run brig ps "$CID" -- -o pid,comm
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "    PID COMMAND" ] || [[ "${lines[0]}" == *PID*COMMAND* ]]
}

@test "kill --all signals every process of the cgroup" {
	mkdir -p "$BATS_TEST_TMPDIR/got"
	add_bind_mount "$BATS_TEST_TMPDIR/got" /got
	# Two processes each trap USR1 and note it.
	set_args sh -c 'sh -c "trap \"echo child >/got/child\" USR1; while true; do sleep 0.1; done" &
		trap "echo init >/got/init" USR1; while true; do sleep 0.1; done'
	brig_detached run -d "$CID"
	sleep 1
	brig kill --all "$CID" USR1
	wait_for_file "$BATS_TEST_TMPDIR/got/init"
	wait_for_file "$BATS_TEST_TMPDIR/got/child"
}

@test "events --stats prints one JSON statistics object" {
	set_args sleep 100
	brig_detached run -d "$CID"
	run brig events --stats "$CID"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	jq -e --arg id "$CID" '.type == "stats" and .id == $id and (.data.cpu.usage.total | type) == "number"' <<<"$output" >/dev/null
}

@test "events streams statistics at its interval and ends with the container" {
	set_args sleep 2
	brig_detached run -d "$CID"
	run timeout 20 "$BRIG" --root "$ROOT" events --interval 500ms "$CID"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 2 ] || fail "expected several lines: $output"
	jq -e '.type == "stats"' <<<"${lines[0]}" >/dev/null
}

@test "a device outside the allow list can be neither created nor opened" {
	update_config '.process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"] | .process.capabilities.permitted += ["CAP_MKNOD"]'
	# kmsg (1:11) is not allowed; null (1:3) is.
	set_args sh -c 'mknod /tmp/kmsg c 1 11 && echo kmsg-made; mknod /tmp/null c 1 3 && echo null-made; echo x >/dev/null && echo null-works'
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs"}]'
	run brig run "$CID"
	[[ "$output" != *kmsg-made* ]] || fail "mknod of a denied device worked: $output"
	[[ "$output" == *null-made* ]] || fail "mknod of an allowed device failed: $output"
	[[ "$output" == *null-works* ]]
}

@test "a device given in linux.devices is allowed to the container" {
	update_config '.linux.devices = [{path: "/dev/kmsg", type: "c", major: 1, minor: 11, fileMode: 420}]'
	# Writing needs no CAP_SYSLOG, so only the device rule decides.
	set_args sh -c 'echo brig-device-test >/dev/kmsg && echo opened'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *opened* ]] || fail "output: $output"
}

@test "containers with the same device rules share one pinned program, and update keeps it" {
	# The cache lives in bpffs (libcontainer/cgroup/devices_bpf_cache.c); the VM mounts one.
	[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] || fail "no bpffs on /sys/fs/bpf here"
	update_config '.process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"] | .process.capabilities.permitted += ["CAP_MKNOD"]'
	set_args sleep 100
	brig_detached run -d "$CID"
	pins=$(ls /sys/fs/bpf/brig | grep -c '^devices-')
	[ "$pins" -ge 1 ]
	brig_detached run -d "$CID-2"
	[ "$(ls /sys/fs/bpf/brig | grep -c '^devices-')" -eq "$pins" ] || fail "a second pin for the same rules"
	# The same rules again: the program is attached already and stays.
	echo '{"devices": [{"allow": false, "access": "rwm"}]}' | brig update -r - "$CID"
	run brig exec "$CID" sh -c 'echo x >/dev/null && echo null-works; mknod /dev/brig-kmsg c 1 11 && echo kmsg-made; mknod /dev/brig-null c 1 3 && echo null-made'
	[[ "$output" == *null-works* ]] || fail "output: $output"
	[[ "$output" != *kmsg-made* ]] || fail "a denied device was made after update: $output"
	[[ "$output" == *null-made* ]] || fail "an allowed device could not be made after update: $output"
	brig delete -f "$CID-2"
}

@test "a controller the host does not have is named, and nothing is left" {
	update_config '.linux.resources.unified = {"nosuch.max": "1"}'
	set_args true
	run --separate-stderr brig run "$CID"
	assert_one_line_error nosuch
	assert_no_leftovers "$CID"
	[ -z "$(find "$(cgroup_v2_root)" -name "$CID")" ] || fail "a cgroup was left"
}

@test "--cgroup-manager disabled leaves cgroups to the caller" {
	set_args sleep 100
	BRIG_TEST_MARK=$MARK "$BRIG" --root "$ROOT" --cgroup-manager disabled run -d "$CID" </dev/null >/dev/null
	[ "$(container_cgroup "$CID")" = "" ]
	run --separate-stderr brig pause "$CID"
	assert_one_line_error cgroup
	brig delete -f "$CID"
}

@test "an unknown --cgroup-manager is refused" {
	run --separate-stderr brig --cgroup-manager cgroupv3 list
	assert_one_line_error cgroupv3
	# systemd is known: it is --systemd-cgroup (systemd.bats)
	brig --cgroup-manager systemd list >/dev/null
}
