#!/usr/bin/env bats
# The container's filesystem: spec mounts, /dev, masked and read-only
# paths, the read-only root, propagation, and symlinks that try to escape.

load helpers

setup() {
	setup_bundle
	HOSTDIR=$BATS_TEST_TMPDIR/hostdir
	mkdir -p "$HOSTDIR"
	echo "from the host" >"$HOSTDIR/file"
}

teardown() {
	# Mounts this test made on the host itself, innermost first.
	for m in ${HOST_MOUNTS:-}; do
		umount "$m" 2>/dev/null || true
	done
	teardown_bundle
	if [ -n "${OUTSIDE:-}" ]; then
		rm -rf "$OUTSIDE"
	fi
}

@test "a tmpfs mount gets its size" {
	add_mount /scratch tmpfs tmpfs size=1m mode=1777
	set_args sh -c 'grep " /scratch " /proc/self/mountinfo; stat -c %a /scratch; df -k /scratch | tail -1'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *" - tmpfs "* ]]
	[[ "${lines[0]}" == *size=1024k* ]]
	[ "${lines[1]}" = 1777 ]
	[ "$(awk '{print $2}' <<<"${lines[2]}")" = 1024 ]
}

@test "a tmpfs past its size fails with ENOSPC" {
	add_mount /scratch tmpfs tmpfs size=64k
	set_args sh -c 'dd if=/dev/zero of=/scratch/big bs=1k count=128 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *rc=1* ]]
}

@test "nosuid, noexec and nodev show in the container's mountinfo" {
	add_mount /scratch tmpfs tmpfs nosuid noexec nodev
	add_mount /plain tmpfs tmpfs
	set_args sh -c 'grep " /scratch " /proc/self/mountinfo | cut -d" " -f6; grep " /plain " /proc/self/mountinfo | cut -d" " -f6'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	for opt in nosuid noexec nodev; do
		[[ ",${lines[0]}," == *",$opt,"* ]] || fail "$opt missing: ${lines[0]}"
	done
	[[ ",${lines[1]}," != *",noexec,"* ]]
}

@test "noexec forbids running a program from the mount" {
	add_mount /scratch tmpfs tmpfs noexec
	set_args sh -c 'cp /bin/busybox /scratch/bb && /scratch/bb true; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Permission denied"* ]]
	[[ "$output" == *rc=126* ]]
}

@test "a rw bind mount writes through to the host directory" {
	add_bind_mount "$HOSTDIR" /data rw
	set_args sh -c 'cat /data/file; echo "from the container" >/data/new'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "from the host" ]
	[ "$(cat "$HOSTDIR/new")" = "from the container" ]
}

@test "a ro bind mount refuses writes with EROFS" {
	add_bind_mount "$HOSTDIR" /data ro
	set_args sh -c 'cat /data/file; touch /data/new 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "from the host" ]
	[[ "$output" == *"Read-only file system"* ]]
	[[ "$output" == *rc=1 ]]
	[ ! -e "$HOSTDIR/new" ]
}

@test "a ro bind mount stays writable on the host" {
	add_bind_mount "$HOSTDIR" /data ro
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
	touch "$HOSTDIR/still-writable"
}

@test "a single file can be bind mounted" {
	add_bind_mount "$HOSTDIR/file" /etc/motd ro
	set_args cat /etc/motd
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "from the host" ]
}

@test "a missing mount destination is created, nested" {
	add_mount /deep/er/mount tmpfs tmpfs
	set_args sh -c 'grep -c " /deep/er/mount " /proc/self/mountinfo'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
}

@test "the container's mounts are not visible on the host" {
	add_mount /scratch tmpfs tmpfs
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	[ -z "$(grep -F "$BUNDLE" /proc/self/mountinfo)" ]
	# …but they are in the container's mount namespace.
	pid=$(container_pid "$CID")
	grep -q " /scratch " "/proc/$pid/mountinfo"
}

@test "masked paths read as empty" {
	mkdir -p "$ROOTFS/secret-dir"
	echo hidden >"$ROOTFS/secret-dir/inside"
	echo hidden >"$ROOTFS/etc/secret-file"
	update_config '.linux.maskedPaths += ["/etc/secret-file", "/secret-dir", "/proc/version", "/does/not/exist"]'
	set_args sh -c 'echo "[$(cat /etc/secret-file)]"; echo "[$(ls -A /secret-dir)]"; echo "[$(cat /proc/version)]"'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "[]" ]
	[ "${lines[1]}" = "[]" ]
	[ "${lines[2]}" = "[]" ]
	# Masking happens in the container, not in the bundle.
	[ "$(cat "$ROOTFS/etc/secret-file")" = hidden ]
}

@test "masked directories are one empty read-only tmpfs, bound on each" {
	mkdir -p "$ROOTFS/secret-a" "$ROOTFS/secret-b"
	echo hidden >"$ROOTFS/secret-a/inside"
	echo hidden >"$ROOTFS/secret-b/inside"
	update_config '.root.readonly = false | .linux.maskedPaths += ["/secret-a", "/secret-b"]'
	set_args sh -c 'for d in /secret-a /secret-b; do echo "[$(ls -A $d)]"; touch $d/x 2>/dev/null && echo writable; done; awk '"'"'$5 == "/secret-a" || $5 == "/secret-b" { print $3, $9 }'"'"' /proc/self/mountinfo'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "[]" ]
	[ "${lines[1]}" = "[]" ]
	# One superblock for both: each costs every memory cgroup of the host.
	[ "${#lines[@]}" = 4 ] || fail "$output"
	[ "${lines[2]}" = "${lines[3]}" ] || fail "two superblocks: $output"
	[ "${lines[2]#* }" = tmpfs ] || fail "not a tmpfs: $output"
}

@test "writes to a masked file do not reach it" {
	echo hidden >"$ROOTFS/etc/secret-file"
	update_config '.root.readonly = false | .linux.maskedPaths += ["/etc/secret-file"]'
	set_args sh -c 'echo x 2>/dev/null >/etc/secret-file; echo "[$(cat /etc/secret-file)]"'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "[]" ]
	[ "$(cat "$ROOTFS/etc/secret-file")" = hidden ]
}

@test "read-only paths refuse writes, the rest stays writable" {
	mkdir -p "$ROOTFS/ro-dir" "$ROOTFS/rw-dir"
	update_config '.root.readonly = false | .linux.readonlyPaths += ["/ro-dir"]'
	set_args sh -c 'touch /ro-dir/x 2>&1; echo rc=$?; touch /rw-dir/x; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"Read-only file system"* ]]
	[ "${lines[1]}" = rc=1 ]
	[ "${lines[2]}" = rc=0 ]
	[ ! -e "$ROOTFS/ro-dir/x" ]
	[ -e "$ROOTFS/rw-dir/x" ]
}

@test "/proc/sys is read-only by default" {
	# Writes back the current value, so a broken runtime changes nothing.
	set_args sh -c 'v=$(cat /proc/sys/vm/max_map_count); { echo "$v" >/proc/sys/vm/max_map_count; } 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	[ "${lines[-1]}" = rc=1 ]
}

@test "root.readonly = true makes / read-only" {
	update_config '.root.readonly = true'
	set_args sh -c 'touch /new-file 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"Read-only file system"* ]]
	[ "${lines[1]}" = rc=1 ]
	[ ! -e "$ROOTFS/new-file" ]
}

@test "root.readonly = false leaves / writable" {
	update_config '.root.readonly = false'
	set_args sh -c 'touch /new-file; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = rc=0 ]
	[ -e "$ROOTFS/new-file" ]
}

@test "a read-only root still has writable tmpfs mounts" {
	update_config '.root.readonly = true'
	add_mount /tmp tmpfs tmpfs
	set_args sh -c 'touch /tmp/x && echo ok'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

# v1_host_names: what the host has in /sys/fs/cgroup on a host with cgroup
# v1 hierarchies (a directory per hierarchy, links to co-mounted ones,
# "unified" on a hybrid host), sorted; nothing on a unified host.
v1_host_names() {
	[ "$(stat -f -c %T /sys/fs/cgroup)" = tmpfs ] || return 0
	local h
	for h in /sys/fs/cgroup/*; do
		case $(stat -f -c %T "$h") in cgroupfs | cgroup2fs) echo "${h##*/}" ;; esac
	done | sort
}

@test "on a cgroup v1 host, /sys/fs/cgroup holds the container's own cgroup of each hierarchy, read-only" {
	[ -n "$(v1_host_names)" ] || skip "the host has no cgroup v1 hierarchy"
	update_config '.linux.resources.memory = {limit: 33554432}'
	set_args sh -c '
		ls /sys/fs/cgroup | sort | tr "\n" " "; echo
		grep " /sys/fs/cgroup" /proc/self/mountinfo | cut -d" " -f5,6
		echo "limit $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"
		echo -n procs
		while read -r p; do echo -n " $p"; done </sys/fs/cgroup/memory/cgroup.procs
		echo'
	for ns in with without; do
		[ "$ns" = with ] || update_config '.linux.namespaces |= map(select(.type != "cgroup"))'
		run brig run "$CID-$ns"
		echo "$output"
		[ "$status" -eq 0 ]
		# Named as the host names them, co-mounted links included.
		[ "$(squeeze "${lines[0]}")" = "$(squeeze "$(v1_host_names)")" ]
		# The tmpfs and every hierarchy in it: read-only, nosuid, nodev, noexec.
		local n=0 line
		while read -r line; do
			[[ ",${line#* }," == *,ro,*nosuid,*nodev,*noexec,* ]] || fail "$ns: $line"
			n=$((n + 1))
		done < <(grep '^/sys/fs/cgroup' <<<"$output")
		[ "$n" -gt 1 ]
		# Its own memory cgroup: the limit it was given, and only itself
		# (pid 1 of its pid namespace, reading with shell builtins) in it.
		grep -qx "limit 33554432" <<<"$output"
		grep -qx "procs 1" <<<"$output"
	done
}

# cgroupns_view ID MODE: the container's hierarchies, each with its root
# shown as / and mounted MODE (ro or rw).
cgroupns_view() {
	run brig run "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -gt 1 ]
	for line in "${lines[@]}"; do
		[[ "$line" == "/ /sys/fs/cgroup/"*" $2,"* ]] || fail "$2: $line"
	done
}

@test "on a cgroup v1 host, a cgroup namespace sees each hierarchy's root as /, read-only or writable" {
	[ -n "$(v1_host_names)" ] || skip "the host has no cgroup v1 hierarchy"
	set_args sh -c 'grep " /sys/fs/cgroup/" /proc/self/mountinfo | cut -d" " -f4-6'
	# Read-only: the container's own directories bound from the host.
	cgroupns_view "$CID-ro" ro
	# Writable: mounted afresh in the namespace.
	update_config '(.mounts[] | select(.destination == "/sys/fs/cgroup") | .options) |= map(select(. != "ro"))'
	cgroupns_view "$CID-rw" rw
}

@test "/dev has the standard devices and links" {
	set_args sh -c '
		for f in null zero full random urandom tty ptmx; do
			[ -c /dev/$f ] || echo "not a char device: $f"
		done
		for f in fd stdin stdout stderr; do
			[ -L /dev/$f ] || echo "not a symlink: $f"
		done
		[ -d /dev/shm ] || echo "no /dev/shm"
		[ -d /dev/pts ] || echo "no /dev/pts"
		stat -c "%n %t %T %a" /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty
		stat -c "%n %a" /dev/shm
		for f in fd stdin stdout stderr; do readlink /dev/$f; done
		head -c 4 /dev/zero | wc -c
		echo discard >/dev/null && echo null-ok
		[ "$(head -c 8 /dev/urandom | wc -c)" = 8 ] && echo urandom-ok'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not a"* && "$output" != *"no /dev"* ]]
	grep -qx "/dev/null 1 3 666" <<<"$output"
	grep -qx "/dev/zero 1 5 666" <<<"$output"
	grep -qx "/dev/full 1 7 666" <<<"$output"
	grep -qx "/dev/random 1 8 666" <<<"$output"
	grep -qx "/dev/urandom 1 9 666" <<<"$output"
	grep -qx "/dev/tty 5 0 666" <<<"$output"
	grep -qx "/dev/shm 1777" <<<"$output"
	grep -qx "/proc/self/fd" <<<"$output"
	grep -qx "/proc/self/fd/0" <<<"$output"
	grep -qx "/proc/self/fd/1" <<<"$output"
	grep -qx "/proc/self/fd/2" <<<"$output"
	grep -qx 4 <<<"$output"
	grep -qx null-ok <<<"$output"
	grep -qx urandom-ok <<<"$output"
}

@test "/dev has no host devices beyond the standard ones" {
	set_args sh -c 'ls /dev'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ " ${lines[*]} " != *" sda "* && " ${lines[*]} " != *" vda "* && " ${lines[*]} " != *" mem "* ]]
}

@test "a linux.devices entry is created with its type, numbers, mode and owner" {
	update_config '.linux.devices = [
		{"path": "/dev/mydev", "type": "c", "major": 1, "minor": 5, "fileMode": 416, "uid": 1000, "gid": 2000},
		{"path": "/dev/sub/myblk", "type": "b", "major": 7, "minor": 200, "fileMode": 384}]'
	set_args sh -c 'stat -c "%F %t %T %a %u %g" /dev/mydev /dev/sub/myblk'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	# fileMode 416 is 0640; 384 is 0600. stat prints major/minor in hex.
	[ "${lines[0]}" = "character special file 1 5 640 1000 2000" ]
	[ "${lines[1]}" = "block special file 7 c8 600 0 0" ]
}

# propagation_session PROPAGATION: the rootfs is a shared mount on the host
# (as an overlay on a systemd host is); after the container starts, the host
# mounts a tmpfs on rootfs/mnt. Prints whether the container saw it.
propagation_session() {
	update_config '.linux.rootfsPropagation = $p' --arg p "$1"
	mount --bind "$ROOTFS" "$ROOTFS"
	HOST_MOUNTS=$ROOTFS
	mount --make-shared "$ROOTFS"
	mkdir -p "$BATS_TEST_TMPDIR/ctl"
	add_bind_mount "$BATS_TEST_TMPDIR/ctl" /ctl
	set_args sh -c '
		echo ready
		while [ ! -e /ctl/go ]; do sleep 0.05; done
		if grep -q " /mnt " /proc/self/mountinfo; then echo seen; else echo unseen; fi'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_line "$CT_OUT" ready
	mount -t tmpfs host-tmpfs "$ROOTFS/mnt"
	HOST_MOUNTS="$ROOTFS/mnt $ROOTFS"
	touch "$BATS_TEST_TMPDIR/ctl/go"
	wait_for_status "$CID" stopped
}

@test "rootfsPropagation rslave: host mounts under the rootfs reach the container" {
	propagation_session rslave
	[ "$(tail -1 "$CT_OUT")" = seen ]
}

@test "rootfsPropagation rprivate: host mounts under the rootfs stay out" {
	propagation_session rprivate
	[ "$(tail -1 "$CT_OUT")" = unseen ]
}

@test "rootfsPropagation private: the container's root mount is not shared" {
	update_config '.linux.rootfsPropagation = "private"'
	set_args sh -c 'awk '"'"'$5 == "/"'"'"' /proc/self/mountinfo'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[[ "$output" != *shared:* && "$output" != *master:* ]]
}

@test "an unknown rootfsPropagation fails" {
	update_config '.linux.rootfsPropagation = "sideways"'
	run --separate-stderr brig run "$CID"
	assert_one_line_error brig:sideways
	assert_no_leftovers "$CID"
}

@test "a bind onto an absolute symlink of the image lands where the link points inside the rootfs" {
	# As in images whose /etc/resolv.conf is systemd-resolved's stub, into
	# which podman and Docker bind their own resolv.conf.
	mkdir -p "$ROOTFS/etc"
	rm -f "$ROOTFS/etc/resolv.conf"
	ln -s /run/systemd/resolve/stub-resolv.conf "$ROOTFS/etc/resolv.conf"
	echo "nameserver 192.0.2.53" >"$BATS_TEST_TMPDIR/resolv.conf"
	add_bind_mount "$BATS_TEST_TMPDIR/resolv.conf" /etc/resolv.conf ro
	set_args cat /etc/resolv.conf
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$output" = "nameserver 192.0.2.53" ]
	# The link's target was made in the rootfs, and the host's left alone.
	[ -f "$ROOTFS/run/systemd/resolve/stub-resolv.conf" ]
	[ -L "$ROOTFS/etc/resolv.conf" ]
	refute grep -qF " /run/systemd/resolve/stub-resolv.conf " /proc/self/mountinfo
	assert_no_leftovers "$CID"
}

@test "a read-only /dev still gets its nodes, pts, shm and mqueue, and is read-only inside" {
	update_config '.mounts |= map(if .destination == "/dev" then .options += ["ro"] else . end)'
	set_args sh -c 'for m in /dev/pts /dev/shm /dev/mqueue; do grep -q " $m " /proc/self/mountinfo && echo "$m"; done
		[ -c /dev/null ] && echo null; touch /dev/new 2>/dev/null || echo ro
		awk "\$5 == \"/dev\" { print \$6 }" /proc/self/mountinfo | cut -d, -f1'
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$(tr '\n' ' ' <<<"$output")" = "/dev/pts /dev/shm /dev/mqueue null ro ro " ] || fail "inside: $output"
}

@test "a mount on a symlink that points out of the rootfs stays inside" {
	OUTSIDE=/tmp/outside-$RANDOM-$$
	rm -rf "$OUTSIDE"
	ln -s "$OUTSIDE" "$ROOTFS/evil"
	add_mount /evil tmpfs tmpfs size=1m
	update_config '.root.readonly = false'
	set_args sh -c 'touch /evil/written && echo wrote'

	# Refusing the mount or resolving the link inside the rootfs are both
	# fine; touching the host is not.
	run brig run "$CID"
	[ ! -e "$OUTSIDE" ] || fail "the container created $OUTSIDE on the host"
	refute grep -qF " $OUTSIDE " /proc/self/mountinfo
	if [ "$status" -eq 0 ]; then
		[ "$output" = wrote ]
	fi
	assert_no_leftovers "$CID"
}

@test "a bind mount onto a symlink that points out of the rootfs stays inside" {
	OUTSIDE=/tmp/outside-$RANDOM-$$
	mkdir -p "$OUTSIDE"
	ln -s "$OUTSIDE" "$ROOTFS/evil"
	add_bind_mount "$HOSTDIR" /evil rw
	update_config '.root.readonly = false'
	set_args sh -c 'touch /evil/written && echo wrote'

	run brig run "$CID"
	# The host directory the link names is neither covered nor written.
	[ -z "$(ls -A "$OUTSIDE")" ]
	refute grep -qF " $OUTSIDE " /proc/self/mountinfo
	if [ "$status" -eq 0 ]; then
		[ -e "$HOSTDIR/written" ]
	fi
	assert_no_leftovers "$CID"
}

@test "a mount destination with .. cannot climb out of the rootfs" {
	OUTSIDE=/tmp/outside-$RANDOM-$$
	rm -rf "$OUTSIDE"
	rel=../../../../../../../../..$OUTSIDE
	add_mount "/$rel" tmpfs tmpfs
	update_config '.root.readonly = false'
	set_args true
	run brig run "$CID"
	[ ! -e "$OUTSIDE" ]
	refute grep -qF " $OUTSIDE " /proc/self/mountinfo
	assert_no_leftovers "$CID"
}
