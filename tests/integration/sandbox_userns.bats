#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# Every sandbox in a user namespace of its own (brig-sandbox(8), USER
# NAMESPACE): two sandboxes side by side, seen from the host and from
# inside; the ranges, their pool, their records under concurrent creates;
# `--userns host`; the profile outside `brig sandbox`; an escape landing as
# a sandbox's host uid. Needs what sandbox.bats needs: `make check` runs it
# on the host and in the test VM (whose tree is an ext4 image: 9p can't be
# id-mapped).

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	# The ranges' records and pool files of this file's own: a test that
	# changes the pool touches nothing of the host's.
	export BRIG_IDRANGE_DIR=$BATS_FILE_TMPDIR/idranges
	export BRIG_SUBUID=$BATS_FILE_TMPDIR/subuid BRIG_SUBGID=$BATS_FILE_TMPDIR/subgid
	: >"$BRIG_SUBUID"
	: >"$BRIG_SUBGID"
	for id in u1 u2; do
		timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" \
			--memory 256M --data-size 64M "$id" >"$BATS_FILE_TMPDIR/$id.out" 2>&1 || true
	done
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in u1 u2; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	stop_file_proxies
}

setup() {
	# helpers.bash's brig, container_pid and container_status read these.
	ROOT=$SB_ROOT
	MARK=none
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	require_sandboxes u1 u2
}

teardown() {
	: >"$BRIG_SUBUID"
	: >"$BRIG_SUBGID"
	for id in ${EXTRA_IDS:-}; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
}

# range_of ID: "UID GID", the host ids the sandbox's 0 maps to, as its dir
# records them.
range_of() {
	cat "$BRIG_SANDBOX_DIR/$1/idrange"
}

# host_uid_of PID: the real uid of a host process.
host_uid_of() {
	awk '/^Uid:/ { print $2 }' "/proc/$1/status"
}

# is_account_uid UID: whether /etc/passwd names it.
is_account_uid() {
	cut -d: -f3 /etc/passwd | grep -qx "$1"
}

@test "userns: two sandboxes run as host ids of their own, none of them an account's" {
	read -r u1_uid u1_gid < <(range_of u1)
	read -r u2_uid u2_gid < <(range_of u2)
	[ "$u1_uid" != "$u2_uid" ]
	[ "$u1_gid" != "$u2_gid" ]
	# Ranges of 65536 that do not overlap.
	[ $((u1_uid - u2_uid)) -ge 65536 ] || [ $((u2_uid - u1_uid)) -ge 65536 ]
	for id in u1 u2; do
		read -r base gbase < <(range_of "$id")
		pid=$(container_pid "$id")
		[ "$(awk '{ print $1, $2, $3 }' "/proc/$pid/uid_map")" = "0 $base 65536" ]
		[ "$(awk '{ print $1, $2, $3 }' "/proc/$pid/gid_map")" = "0 $gbase 65536" ]
		# brig-init and an exec: the sandbox user, 1000 in the range.
		[ "$(host_uid_of "$pid")" = $((base + 1000)) ]
		sb exec "$id" -- sh -c 'sleep 30 & echo $! >/mnt/data/sleeper.pid; wait' &
		for _ in $(seq 100); do [ -s "$(sb_data "$id")/sleeper.pid" ] && break; sleep 0.1; done
		sleeper=$(pgrep -f '^sleep 30$' -U $((base + 1000)) | head -1)
		[ -n "$sleeper" ] || fail "no sleep of $id running as host uid $((base + 1000))"
		# The workspace's files, as the host sees them.
		sb exec "$id" -- sh -c 'echo mine >/mnt/data/owned'
		[ "$(stat -c '%u:%g' "$(sb_data "$id")/owned")" = "$((base + 1000)):$((gbase + 1000))" ]
		[ "$(stat -c '%u' "$(sb_data "$id")")" = $((base + 1000)) ]
		refute is_account_uid $((base + 1000))
		refute is_account_uid "$base"
		kill "$sleeper"
	done
	wait
}

@test "userns: inside, the user is still sandbox (1000) and the tree is root's" {
	run sb exec u1 -- sh -c 'id -u; id -g; id -un; pwd; stat -c "%u:%g" / /usr/bin/python3 /etc/passwd; stat -c "%U %a" /mnt/data; cat /proc/self/uid_map'
	[ "$status" -eq 0 ]
	read -r base _ < <(range_of u1)
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
	[ "${lines[2]}" = sandbox ]
	[ "${lines[3]}" = /mnt/data ]
	[ "${lines[4]}" = 0:0 ]
	[ "${lines[5]}" = 0:0 ]
	[ "${lines[6]}" = 0:0 ]
	[ "${lines[7]}" = "sandbox 700" ]
	[ "$(squeeze "${lines[8]}")" = "0 $base 65536" ]
	# What a user of the sandbox did before still works.
	run sb exec u1 -- python3 -c 'print(6 * 7)'
	[ "$status" -eq 0 ]
	[ "$output" = 42 ]
	run sb exec u1 -- sh -c 'echo $LD_PRELOAD; grep -c jemalloc /proc/self/maps'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ]
	[ "${lines[1]}" -gt 0 ]
	run sb exec u1 -- sh -c 'touch /usr/x'
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	run sb exec u1 -- sh -c 'echo t >/tmp/t && echo h >$HOME/h && cat /tmp/t $HOME/h && ls /dev/pts/ptmx /dev/mqueue /dev/shm >/dev/null && echo ok'
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "t h ok" ]
	# No capabilities, no_new_privs, seccomp; still no nested user namespace.
	run sb exec u1 -- sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'
	[ "$(squeeze "$output")" = "CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2" ]
	run sb exec u1 -- python3 -c 'import ctypes, sys; sys.exit(3 if ctypes.CDLL(None).unshare(0x10000000) else 0)'
	[ "$status" -eq 3 ]
}

@test "userns: exec -t gets a terminal that the sandbox's user owns" {
	# The pty is made after joining the namespace, by its root: made by the
	# host's root (unmapped inside), it could not be given to the user.
	run sb exec -t u1 -- sh -c 'tty; stat -c "%U" "$(tty)"; exit 3' </dev/null
	[ "$status" -eq 3 ]
	output=$(tr -d '\r' <<<"$output")
	[[ "$(squeeze "$output")" =~ ^/dev/pts/[0-9]+\ sandbox$ ]]
}

@test "userns: a process escaping a sandbox lands as its host uid and can't touch another's workspace" {
	read -r u1_uid u1_gid < <(range_of u1)
	read -r u2_uid _ < <(range_of u2)
	sb exec u2 -- sh -c 'echo secret >/mnt/data/secret'
	# The host holds no mount of u2's data: a process of u2's user is the
	# way in (/proc/PID/root) that an escape would try.
	sb exec u2 -- sleep 120 &
	for _ in $(seq 100); do
		s2=$(pgrep -f '^sleep 120$' -U $((u2_uid + 1000)) | head -1)
		[ -n "$s2" ] && break
		sleep 0.1
	done
	[ -n "$s2" ] || fail "no sleep of u2's user on the host"
	as_u1() {
		setpriv --reuid=$((u1_uid + 1000)) --regid=$((u1_gid + 1000)) --clear-groups -- "$@"
	}
	u2_data=/proc/$s2/root/mnt/data
	run as_u1 cat "$u2_data/secret"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	run as_u1 sh -c "echo x >'$u2_data/planted'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	[ ! -e "$u2_data/planted" ]
	u2_pid=$(container_pid u2)
	[ -n "$u2_pid" ]
	run as_u1 kill -0 "$u2_pid"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Operation not permitted"* ]]
	run as_u1 cat "$BRIG_SANDBOX_DIR/u2/data.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	# Nor the state or the records; the tree's files are root's, not its.
	run as_u1 ls "$SB_ROOT"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	run as_u1 ls "$BRIG_IDRANGE_DIR"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	# The sandbox's root is its own: the host keeps no bind of its tree.
	[ ! -e "$BRIG_SANDBOX_DIR/u1/tree" ]
	refute grep -q " $BRIG_SANDBOX_DIR/u1/tree " /proc/self/mountinfo
	[ "$(stat -c %u "/proc/$(container_pid u1)/root/etc/passwd")" = "$u1_uid" ]
	[ "$(stat -c %u "$ROOTFS_TREE/etc/passwd")" = 0 ]
	# The way in is real: the host's root reads the secret through it.
	[ "$(cat "$u2_data/secret")" = secret ]
	kill "$s2"
	wait
}

@test "userns: sandbox cp keeps the owner on both sides" {
	read -r base gbase < <(range_of u1)
	echo payload >"$BATS_TEST_TMPDIR/in.txt"
	sb cp "$BATS_TEST_TMPDIR/in.txt" u1:/mnt/data/
	[ "$(stat -c '%u:%g' "$(sb_data u1)/in.txt")" = "$((base + 1000)):$((gbase + 1000))" ]
	run sb exec u1 -- sh -c 'stat -c "%U:%G" in.txt && echo more >>in.txt && cat in.txt'
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "sandbox:sandbox payload more" ]
	sb cp u1:/mnt/data/in.txt "$BATS_TEST_TMPDIR/out.txt"
	[ "$(stat -c '%u' "$BATS_TEST_TMPDIR/out.txt")" = "$(id -u)" ]
	[ "$(cat "$BATS_TEST_TMPDIR/out.txt")" = "$(printf 'payload\nmore')" ]
}

@test "userns: ranges are recorded, distinct under concurrent creates, and freed by rm" {
	EXTRA_IDS="c1 c2 c3 c4"
	for id in $EXTRA_IDS; do
		sb create --memory 64M --data-size 8M --pids 64 "$id" >"$BATS_TEST_TMPDIR/$id.out" 2>&1 &
	done
	wait
	local seen=""
	for id in $EXTRA_IDS; do
		[ -s "$BRIG_SANDBOX_DIR/$id/idrange" ] || fail "$id: $(cat "$BATS_TEST_TMPDIR/$id.out")"
		read -r base _ < <(range_of "$id")
		# The record names the sandbox's dir.
		grep -qxF "$BRIG_SANDBOX_DIR/$id" "$BRIG_IDRANGE_DIR/$base"
		seen="$seen $base"
	done
	read -r u1 _ < <(range_of u1)
	read -r u2 _ < <(range_of u2)
	[ "$(echo "$seen $u1 $u2" | tr ' ' '\n' | grep -c .)" -eq 6 ]
	[ "$(echo "$seen $u1 $u2" | tr ' ' '\n' | grep . | sort -u | wc -l)" -eq 6 ]
	for id in $EXTRA_IDS; do
		read -r base _ < <(range_of "$id")
		sb rm "$id"
		[ ! -e "$BRIG_IDRANGE_DIR/$base" ]
		[ ! -e "$BRIG_SANDBOX_DIR/$id" ]
	done
	refute grep -q "$BRIG_SANDBOX_DIR/c" /proc/self/mountinfo
}

@test "userns: the pool is the brig lines of /etc/subuid and /etc/subgid, and a full pool is one clear line" {
	# /etc/subuid and /etc/subgid as this file's own ($BRIG_SUBUID,
	# $BRIG_SUBGID): two ranges, far from the default pool and from every
	# account, beside another user's line that brig must pass over.
	printf 'alice:100000:65536\nbrig:3000000000:131072\n' >"$BRIG_SUBUID"
	printf 'alice:100000:65536\nbrig:3100000000:131072\n' >"$BRIG_SUBGID"
	EXTRA_IDS="p1 p2 p3"
	sb create --memory 64M --data-size 8M --pids 64 p1
	sb create --memory 64M --data-size 8M --pids 64 p2
	[ "$(range_of p1)" = "3000000000 3100000000" ]
	[ "$(range_of p2)" = "3000065536 3100065536" ]
	pid=$(container_pid p2)
	[ "$(awk '{ print $1, $2, $3 }' "/proc/$pid/uid_map")" = "0 3000065536 65536" ]
	run --separate-stderr sb create --memory 64M --data-size 8M p3
	assert_one_line_error "every range of the pool" "/etc/subuid"
	[ ! -e "$BRIG_SANDBOX_DIR/p3" ]
	refute "$BRIG" --root "$SB_ROOT" state p3
	# Freed by rm, the range is handed out again.
	sb rm p1
	sb create --memory 64M --data-size 8M --pids 64 p3
	[ "$(range_of p3)" = "3000000000 3100000000" ]
	# A brig line in only one of the files is refused by name.
	: >"$BRIG_SUBGID"
	run --separate-stderr sb create --memory 64M --data-size 8M p1
	assert_one_line_error "/etc/subgid has none"
	[ ! -e "$BRIG_SANDBOX_DIR/p1" ]
}

@test "userns: --userns host keeps the host's ids; a stopped sandbox's data keeps its mode" {
	EXTRA_IDS="h1"
	sb create --userns host --memory 64M --data-size 8M --pids 64 h1
	pid=$(container_pid h1)
	[ "$(squeeze "$(cat "/proc/$pid/uid_map")")" = "0 0 4294967295" ]
	[ "$(host_uid_of "$pid")" = 1000 ]
	[ ! -e "$BRIG_SANDBOX_DIR/h1/idrange" ]
	[ "$(stat -c %u "$(sb_data h1)")" = 1000 ]
	# Stopped, its data stays; recreated, it must keep the host's ids.
	"$BRIG" --root "$SB_ROOT" kill h1 KILL
	for _ in $(seq 100); do [ "$(container_status h1)" = stopped ] && break; sleep 0.1; done
	"$BRIG" --root "$SB_ROOT" delete h1
	run --separate-stderr sb create --memory 64M --data-size 8M h1
	assert_one_line_error "--userns host"
	[ -e "$BRIG_SANDBOX_DIR/h1/data.img" ]
	run --separate-stderr sb create --userns bogus h1
	assert_one_line_error "--userns" "bogus"
}

@test "userns: --profile sandbox gets one too, with data of its own that goes with it" {
	setup_bundle
	set_args sh -c 'cat /proc/self/uid_map; stat -c %u /usr/bin/python3 /mnt/data; id -u; echo kept >/mnt/data/f; echo ready; sleep 1000'
	brig_detached run -d --profile sandbox "$CID"
	pid=$(container_pid "$CID")
	[ -n "$pid" ]
	wait_for_line "$CT_OUT" ready
	run squeeze "$(cat "$CT_OUT")"
	set -- $output
	[ "$1" = 0 ]
	[ "$2" -ge 65536 ]
	[ "$3" = 65536 ]
	[ "$4" = 0 ]
	[ "$5" = 1000 ]
	[ "$6" = 1000 ]
	# Its data, its tree and its range live in a dir of its own under the
	# home, which its root can reach (the state root is closed to it).
	private=$(ls -d "$BRIG_SANDBOX_DIR"/.containers/*)
	[ "$(echo "$private" | wc -l)" = 1 ]
	[ "$(cat "$private/idrange")" = "$2 $(awk '{print $2}' "/proc/$pid/gid_map")" ]
	grep -qxF "$private" "$BRIG_IDRANGE_DIR/$2"
	grep -q " $private/data " /proc/self/mountinfo
	grep -q " $private/tree " /proc/self/mountinfo
	[ "$(cat "$private/data/f")" = kept ]
	# Deleted with the container: no private dir, no record of its range.
	brig delete --force "$CID"
	[ ! -e "$private" ]
	[ ! -e "$BRIG_IDRANGE_DIR/$2" ]
	refute grep -q "$BRIG_SANDBOX_DIR/.containers" /proc/self/mountinfo
	teardown_bundle
}

@test "userns: a tree that can't be id-mapped is one line naming --userns host, and leaves nothing" {
	mkdir -p "$BATS_TEST_TMPDIR/ramtree"
	mount -t ramfs ramfs "$BATS_TEST_TMPDIR/ramtree"
	mkdir -p "$BATS_TEST_TMPDIR/ramtree/usr/bin" "$BATS_TEST_TMPDIR/ramtree/usr/lib/x86_64-linux-gnu"
	cp "$ROOTFS_TREE/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" "$BATS_TEST_TMPDIR/ramtree/usr/lib/x86_64-linux-gnu/"
	EXTRA_IDS="r1"
	run --separate-stderr sb create --rootfs "$BATS_TEST_TMPDIR/ramtree" r1
	umount "$BATS_TEST_TMPDIR/ramtree"
	assert_one_line_error "id-mapped" "--userns host"
	[ ! -e "$BRIG_SANDBOX_DIR/r1" ]
	refute "$BRIG" --root "$SB_ROOT" state r1
	refute grep -rqxF "$BRIG_SANDBOX_DIR/r1" $BRIG_IDRANGE_DIR
}

@test "userns: the escape probes, from inside a sandbox: nothing of the host to write, join or trace" {
	read -r base _ < <(range_of u1)
	# Each probe prints its name and "blocked" or "OPEN"; every one must be
	# blocked. python3 makes the system calls directly.
	run sb exec u1 -- python3 - <<-'EOF'
		import ctypes, errno, os
		libc = ctypes.CDLL(None, use_errno=True)
		def probe(name, fn):
		    try:
		        r = fn()
		        print(name, "OPEN" if r in (None, 0) else "blocked")
		    except OSError:
		        print(name, "blocked")
		def write(path):
		    return lambda: open(path, "w").write("x")
		probe("runtime-binary", write("/usr/sbin/brig-init"))
		probe("core_pattern", write("/proc/sys/kernel/core_pattern"))
		probe("sysrq", write("/proc/sysrq-trigger"))
		probe("sys", write("/sys/kernel/uevent_helper"))
		probe("tree", write("/etc/passwd"))
		probe("userns", lambda: libc.unshare(0x10000000))
		probe("mountns", lambda: libc.unshare(0x00020000))
		probe("setns", lambda: libc.setns(os.open("/proc/1/ns/mnt", os.O_RDONLY), 0))
		probe("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
		probe("ptrace-init", lambda: libc.ptrace(16, 1, None, None))
		probe("setuid-root", lambda: os.setuid(0))
		probe("chown-to-root", lambda: os.chown("/mnt/data", 0, 0))
		probe("mknod", lambda: os.mknod("/tmp/sda", 0o600 | 0o060000, os.makedev(8, 0)))
	EOF
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(echo "$output" | grep -c ' blocked$')" -eq 13 ]
	refute grep -q ' OPEN$' <<<"$output"
	# What the probes left: the tree and brig-init as they were, and on the
	# host nothing of the sandbox's outside its range.
	[ "$(stat -c %u "$ROOTFS_TREE/etc/passwd")" = 0 ]
	pid=$(container_pid u1)
	[ "$(stat -c %u "/proc/$pid/root/etc/passwd")" = "$base" ]
	for p in $(pgrep -P "$pid") "$pid"; do
		uid=$(awk '/^Uid:/ { print $2 }' "/proc/$p/status")
		[ "$uid" -ge "$base" ]
		[ "$uid" -lt $((base + 65536)) ]
	done
}
