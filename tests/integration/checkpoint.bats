#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the container
# checkpoint and restore through libcriu. criu needs kernel features that
# `criu check` finds missing on the development and CI hosts' kernels, so
# `make check` runs this file in the test VM (tests/vm/, Debian's kernel),
# where criu works. Each dump and restore costs tens of seconds there: the
# tests are few and each proves several things.

load helpers

setup_file() {
	command -v criu >/dev/null || PATH=$PATH:/usr/sbin
	criu check >/dev/null 2>&1 || fail "criu check fails on this kernel: run this file in the VM (tests/vm/run.sh)"
}

setup() {
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	DATA=$BATS_TEST_TMPDIR/data
	mkdir -p "$DATA"
	add_bind_mount "$DATA" /mnt/data
}

# A counter that appends 1, 2, 3... to /mnt/data/log: its value lives in the
# shell's memory, so after a restore the log goes on from where it was, while
# a fresh start would begin again at 1.
COUNTER='i=0; while :; do i=$((i+1)); echo $i >>/mnt/data/log; sleep 0.2; done'

last_count() {
	tail -n 1 "$DATA/log"
}

# wait_for_count_past N: until the counter has written a value above N.
wait_for_count_past() {
	for _ in $(seq 150); do
		[ "$(last_count 2>/dev/null || echo 0)" -gt "$1" ] && return 0
		sleep 0.2
	done
	fail "the counter did not pass $1: last is $(last_count)"
}

# assert_counted_once: 1..N, each once and in order: never restarted.
assert_counted_once() {
	local log n
	log=$(cat "$DATA/log")
	n=$(tail -n 1 <<<"$log")
	[ "$(seq "$n")" = "$log" ] || fail "the log is not 1..$n: $(tr '\n' ' ' <<<"$log")"
}

@test "a counter checkpointed and restored continues from where it was, in its cgroup with its limits" {
	update_config '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 50}'
	set_args sh -c "$COUNTER"
	brig_detached run -d "$CID"
	wait_for_count_past 3

	brig checkpoint --image-path "$IMG" "$CID"
	# Without --leave-running the container is gone, as after delete.
	[ -z "$(container_status "$CID")" ]
	[ ! -e "$ROOT/$CID" ]
	[ -f "$IMG/inventory.img" ]
	at_dump=$(last_count)
	sleep 1
	[ "$(last_count)" = "$at_dump" ]

	brig_detached restore -d --image-path "$IMG" "$CID"
	[ "$(container_status "$CID")" = running ]
	wait_for_count_past $((at_dump + 2))
	assert_counted_once
	# The restored init is the pid state names, in the cgroup brig made
	# with the spec's limits, and brig manages it as any container.
	pid=$(container_pid "$CID")
	cg=$(container_cgroup "$CID")
	grep -qx "$pid" "$cg/cgroup.procs"
	[ "$(cat "$cg/memory.max")" = 67108864 ]
	[ "$(cat "$cg/pids.max")" = 50 ]
	[ "$(brig exec "$CID" cat /proc/1/cmdline | tr '\0' ' ')" = "sh -c $COUNTER " ]
	brig pause "$CID"
	[ "$(container_status "$CID")" = paused ]
	brig resume "$CID"
	brig kill "$CID" KILL
	wait_for_status "$CID" stopped
	brig delete "$CID"
	assert_no_leftovers "$CID"
}

@test "--leave-running keeps the container running; its images restore under a new id" {
	set_args sh -c "$COUNTER"
	brig_detached run -d "$CID"
	wait_for_count_past 2
	brig checkpoint --leave-running --image-path "$IMG" "$CID"
	[ "$(container_status "$CID")" = running ]
	[ -f "$IMG/inventory.img" ]
	n=$(last_count)
	wait_for_count_past "$n"
	brig kill "$CID" KILL
	wait_for_status "$CID" stopped
	brig delete "$CID"

	: >"$DATA/log"
	brig_detached restore -d --image-path "$IMG" "$CID-new"
	[ "$(container_status "$CID-new")" = running ]
	[ -z "$(container_status "$CID")" ]
	# It goes on from the value it had at the dump, not from 1.
	wait_for_count_past 0
	[ "$(head -n 1 "$DATA/log")" -gt 1 ]
	[ "$(brig list -q)" = "$CID-new" ]
	brig delete --force "$CID-new"
	assert_no_leftovers "$CID-new"
}

@test "a pre-dump then a dump with --parent-path; restore in the foreground waits and deletes" {
	set_args sh -c "$COUNTER"
	brig_detached run -d "$CID"
	wait_for_count_past 2
	brig checkpoint --pre-dump --image-path "$IMG/pre" "$CID"
	# A pre-dump leaves the container running.
	[ "$(container_status "$CID")" = running ]
	n=$(last_count)
	wait_for_count_past "$n"
	brig checkpoint --image-path "$IMG/final" --parent-path ../pre "$CID"
	[ -z "$(container_status "$CID")" ]
	# The final dump took the unchanged pages from the pre-dump by reference.
	[ -L "$IMG/final/parent" ] || [ -e "$IMG/final/parent" ]
	at_dump=$(last_count)
	# In the foreground this time, as run: restore waits for the container,
	# exits with its status and deletes it. With the "ignore" cgroup mode
	# criu moves no process: brig starts it in the container's cgroup.
	brig restore --manage-cgroups-mode ignore --image-path "$IMG/final" "$CID" \
		</dev/null >"$CT_OUT" 2>"$CT_ERR" &
	restore_pid=$!
	wait_for_count_past $((at_dump + 1))
	assert_counted_once
	wait_for_status "$CID" running
	grep -qx "$(container_pid "$CID")" "$(container_cgroup "$CID")/cgroup.procs"
	brig kill "$CID" KILL
	rc=0
	wait "$restore_pid" || rc=$?
	[ "$rc" -eq 137 ] || fail "restore exited with $rc: $(cat "$CT_ERR")"
	assert_no_leftovers "$CID"
}

@test "an open file (with its offset) and a unix socket pair with queued data survive" {
	# python3 from the host, its /usr bound read-only: a bind from outside
	# the rootfs is an external mount to criu.
	add_bind_mount /usr /usr ro
	ln -s usr/lib "$ROOTFS/lib"
	ln -s usr/lib64 "$ROOTFS/lib64"
	set_args python3 -c '
import os, socket, time
a, b = socket.socketpair()
a.send(b"queued-before-dump")
f = open("/mnt/data/out", "w")
f.write("before\n"); f.flush()
open("/mnt/data/ready", "w").close()
while not os.path.exists("/mnt/data/go"):
    time.sleep(0.1)
f.write("after:" + b.recv(100).decode() + "\n"); f.flush()
b.send(b"pong"); f.write("reply:" + a.recv(100).decode() + "\n"); f.close()
open("/mnt/data/done", "w").close()
time.sleep(1000)'
	brig_detached run -d "$CID"
	wait_for_file_present "$DATA/ready"
	brig checkpoint --image-path "$IMG" "$CID"
	[ "$(cat "$DATA/out")" = before ]
	brig_detached restore -d --image-path "$IMG" "$CID"
	touch "$DATA/go"
	wait_for_file_present "$DATA/done"
	[ "$(cat "$DATA/out")" = "$(printf 'before\nafter:queued-before-dump\nreply:pong')" ]
	brig delete --force "$CID"
}

# The shape the sandbox profile gives a container: read-only root, tmpfs
# /tmp, a bind-mounted /mnt/data, a non-root user, limits and a seccomp filter.
@test "a sandbox-shaped container is checkpointed, deleted and restored with its memory, files and confinement" {
	(cd "$BUNDLE" && "$BRIG" spec --seccomp "${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles/sandbox.json") ||
		fail "brig spec --seccomp sandbox.json failed"
	chown 1000:1000 "$DATA"
	echo "kept on disk" >"$DATA/before.txt"
	update_config '.root.readonly = true
		| .process.user = {uid: 1000, gid: 1000}
		| .linux.resources.memory = {limit: 134217728}
		| .linux.resources.pids = {limit: 64}
		| .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "size=16m"]}]'
	# A secret only in the shell's memory, and a file only in the tmpfs.
	set_args sh -c 'secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d " \n"); echo "$secret" >/tmp/in-tmpfs; echo ok >/mnt/data/ready
		while :; do [ -e /mnt/data/ask ] && { echo "$secret" >/mnt/data/answer; rm /mnt/data/ask; }; sleep 0.2; done'
	brig_detached run -d "$CID"
	wait_for_file_present "$DATA/ready"
	secret=$(brig exec "$CID" cat /tmp/in-tmpfs)
	[ ${#secret} -eq 24 ]

	brig checkpoint --image-path "$IMG" "$CID"
	refute brig state "$CID"
	brig_detached restore -d --image-path "$IMG" "$CID"

	touch "$DATA/ask"
	wait_for_file_present "$DATA/answer"
	[ "$(cat "$DATA/answer")" = "$secret" ]
	[ "$(brig exec "$CID" cat /tmp/in-tmpfs)" = "$secret" ]
	[ "$(cat "$DATA/before.txt")" = "kept on disk" ]
	pid=$(container_pid "$CID")
	[ "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" = 1000 ]
	[ "$(awk '/^Seccomp:/ {print $2}' "/proc/$pid/status")" = 2 ]
	awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo" | grep -q '^ro'
	refute brig exec "$CID" touch /not-writable
	brig exec "$CID" sh -c 'echo new >/mnt/data/after.txt'
	[ "$(cat "$DATA/after.txt")" = new ]
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/memory.max")" = 134217728 ]
	[ "$(cat "$cg/pids.max")" = 64 ]
	brig delete --force "$CID"
	assert_no_leftovers "$CID"
}

# A real sandbox (brig sandbox, the shared tree, brig-init as PID 1): the
# profile is not in the bundle's config.json, so restore must get it from
# the images for the sandbox to come back a sandbox.
@test "brig sandbox checkpoint and restore: memory, /mnt/data, brig-init, user, seccomp and limits come back" {
	local tree=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
	[ -d "$tree/usr/bin" ] || fail "no sandbox tree at $tree: run \`make rootfs\`"
	export BRIG_SANDBOX_DIR=$BATS_TEST_TMPDIR/sandboxes
	export BRIG_INIT=${BRIG_INIT:-$(dirname "$BRIG")/brig-init}
	# The service draws a number it keeps only in memory and records each
	# start: a restarted service would record a second, different number.
	cat >"$BATS_TEST_TMPDIR/services.conf" <<-'EOF'
		[program:keeper]
		command = sh -c 's=$(od -An -N8 -tu8 /dev/urandom); echo $s >>/mnt/data/starts; while :; do if [ -e /mnt/data/ask ]; then echo $s >/mnt/data/answer; rm /mnt/data/ask; fi; sleep 0.2; done'
	EOF
	brig_detached sandbox create --rootfs "$tree" --services "$BATS_TEST_TMPDIR/services.conf" \
		--memory 96M --pids 40 sb
	# The host reaches its data through its init: it holds no mount of it.
	local data
	data=/proc/$(container_pid sb)/root/mnt/data
	wait_for_file_present "$data/starts"
	secret=$(cat "$data/starts")
	[ -n "$secret" ]
	echo kept >"$data/before.txt"
	old_pid=$(container_pid sb)
	# Its own user namespace: the range it holds, recorded in its dir.
	read -r range_uid range_gid <"$BRIG_SANDBOX_DIR/sb/idrange"
	[ "$(awk '{print $1, $2, $3}' "/proc/$old_pid/uid_map")" = "0 $range_uid 65536" ]

	brig sandbox checkpoint sb
	refute brig state sb
	[ ! -e "/proc/$old_pid" ]
	[ -f "$BRIG_SANDBOX_DIR/sb/checkpoint/brig-profile" ]
	brig_detached sandbox restore sb

	[ "$(container_status sb)" = running ]
	pid=$(container_pid sb)
	# As after a create, the host keeps no mount of its tree or its data:
	# the restored init's namespace has its own, and the host reaches the
	# data through that init.
	if grep " $(realpath "$BRIG_SANDBOX_DIR")/sb/" /proc/self/mountinfo; then
		fail "the host still mounts the restored sandbox's tree or data"
	fi
	grep -q " /mnt/data " "/proc/$pid/mountinfo"
	[ "$(cat "$BRIG_SANDBOX_DIR/sb/init.pid")" = "$pid" ]
	echo copied >"$BATS_TEST_TMPDIR/in.txt"
	brig sandbox cp "$BATS_TEST_TMPDIR/in.txt" sb:/mnt/data/in.txt
	data=/proc/$pid/root/mnt/data
	[ "$(cat "$data/in.txt")" = copied ]
	# The cp went through the init: it mounted nothing on the host.
	if grep " $(realpath "$BRIG_SANDBOX_DIR")/sb/" /proc/self/mountinfo; then
		fail "cp mounted the running sandbox's data on the host"
	fi
	touch "$data/ask"
	wait_for_file_present "$data/answer"
	[ "$(cat "$data/answer")" = "$secret" ]
	[ "$(cat "$data/starts")" = "$secret" ]
	[ "$(cat "$data/before.txt")" = kept ]
	[ "$(cat "/proc/$pid/comm")" = brig-init ]
	# Restored into the same range: the same maps, the same host ids.
	[ "$(awk '{print $1, $2, $3}' "/proc/$pid/uid_map")" = "0 $range_uid 65536" ]
	[ "$(awk '{print $1, $2, $3}' "/proc/$pid/gid_map")" = "0 $range_gid 65536" ]
	[ "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" = $((range_uid + 1000)) ]
	[ "$(stat -c %u "$data/answer")" = $((range_uid + 1000)) ]
	[ "$(awk '/^Seccomp:/ {print $2}' "/proc/$pid/status")" = 2 ]
	cg=$(container_cgroup sb)
	[ "$(cat "$cg/memory.max")" = 100663296 ]
	[ "$(cat "$cg/pids.max")" = 40 ]
	brig sandbox rm sb
	assert_no_leftovers sb
	[ ! -e "$BRIG_SANDBOX_DIR/sb" ]
}

@test "bad input: a missing image dir, or an id that exists, is one clear line and leaves nothing" {
	run --separate-stderr brig restore --image-path "$BATS_TEST_TMPDIR/nothing-here" "$CID"
	assert_one_line_error "nothing-here" "No such file or directory"
	assert_no_leftovers "$CID"

	mkdir "$IMG"
	run --separate-stderr brig restore --image-path "$IMG" "$CID"
	assert_one_line_error "no checkpoint"
	assert_no_leftovers "$CID"

	run --separate-stderr brig checkpoint --image-path "$IMG" "$CID"
	assert_one_line_error "$CID" "does not exist"

	# The id is checked before criu reads the images: an index is enough.
	touch "$IMG/inventory.img"
	set_args sleep 1000
	brig_detached run -d "$CID"
	pid=$(container_pid "$CID")
	run --separate-stderr brig restore -d --image-path "$IMG" "$CID"
	assert_one_line_error "$CID" "already exists"
	# The running container is untouched.
	[ "$(container_pid "$CID")" = "$pid" ]
	[ "$(container_status "$CID")" = running ]
	[ "$(brig list -q)" = "$CID" ]

	run --separate-stderr brig checkpoint --lazy-pages --image-path "$IMG" "$CID"
	assert_one_line_error "--lazy-pages" "not supported"
	run --separate-stderr brig checkpoint --manage-cgroups-mode bogus "$CID"
	assert_one_line_error "bogus"
	brig delete --force "$CID"

	# A bundle's sandbox keeps its data in its state dir: refused before the
	# dump, so the container runs on with its data.
	export BRIG_INIT=${BRIG_INIT:-$(dirname "$BRIG")/brig-init}
	rm -rf "$IMG"
	update_config '.mounts |= map(select(.destination != "/mnt/data"))'
	brig_detached run -d --profile sandbox "$CID"
	run --separate-stderr brig checkpoint --image-path "$IMG" "$CID"
	assert_one_line_error "$CID" "/mnt/data goes with the container"
	[ "$(container_status "$CID")" = running ]
	[ ! -e "$IMG/inventory.img" ]
	brig delete --force "$CID"
	assert_no_leftovers "$CID"
}

# wait_for_file_present FILE: until FILE exists (~30 seconds: python and the
# VM are slow to start).
wait_for_file_present() {
	for _ in $(seq 150); do
		[ -e "$1" ] && return 0
		sleep 0.2
	done
	fail "$1 did not appear"
}
