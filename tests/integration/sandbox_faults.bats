#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# Sandboxes under load: many creates at once share nothing they must own
# alone (name, user namespace range, loop device, data image, cgroup), and
# their removal leaves nothing of any of it. Runs on the host (its loop
# devices and v1 or v2 cgroups); needs what sandbox.bats needs.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
N_CONCURRENT=${BRIG_TEST_CONCURRENT:-200}

setup_file() {
	sandbox_file_env
	export BRIG_IDRANGE_DIR=$BATS_FILE_TMPDIR/idranges
}

teardown_file() {
	stop_file_proxies
}

setup() {
	ROOT=$SB_ROOT
	MARK=none
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
}

teardown() {
	[ -z "${FULL:-}" ] || rm -f "$FULL/.filler"
	sb ls 2>/dev/null | awk 'NR > 1 { print $1 }' |
		xargs -r -P 8 -I{} timeout 60 "$BRIG" --root "$SB_ROOT" sandbox rm {} >/dev/null 2>&1 || true
	# The full disk of a test of its own (full_home).
	[ -z "${FULL:-}" ] || umount -l "$FULL" 2>/dev/null || true
}

# leftovers: one line per thing a sandbox of this file's left behind:
# loop devices on its images, mounts under its home, id range records,
# cgroup directories named after it (v1 hierarchies and v2 alike).
leftovers() {
	losetup -a | grep -F "$BRIG_SANDBOX_DIR/" || true
	grep -F "$BRIG_SANDBOX_DIR/" /proc/self/mountinfo || true
	ls "$BRIG_IDRANGE_DIR" 2>/dev/null || true
	find /sys/fs/cgroup -maxdepth 6 -type d -name 'f-*' 2>/dev/null || true
	ls "$SB_ROOT" 2>/dev/null | grep -v '^\.' || true
	# processes whose root is a sandbox's of this file
	for p in /proc/[0-9]*; do
		readlink "$p/root" 2>/dev/null
	done | grep -F "$BRIG_SANDBOX_DIR/" || true
}

# killed_at SYSCALL N ARGS...: `brig --root $SB_ROOT ARGS`, killed
# (SIGKILL, by strace) as it enters its own Nth call of SYSCALL; $status is
# 137 when it was, its own when it made fewer.
killed_at() {
	local call=$1 n=$2
	shift 2
	# LeakSanitizer can't run under ptrace (the sanitizer run's brig):
	# this one brig goes without its leak check.
	run env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		timeout -k 5 120 strace -o /dev/null -e trace="$call" \
		-e inject="$call:signal=KILL:when=$n" "$BRIG" --root "$SB_ROOT" "$@"
}

# Every kind of step that changes something: made, mounted, written,
# renamed, cloned, attached, signalled, removed.
CREATE_STEPS="mkdir mkdirat clone clone3 write rename renameat open_tree mount move_mount mount_setattr ioctl unlinkat"
RM_STEPS="kill pidfd_send_signal umount2 unlinkat unlink rmdir write mkdir"

# after_kill ID WHAT: ls works and lists what is left of ID, and rm
# clears it (or says there is no such sandbox, having nothing to clear).
after_kill() {
	local id=$1 what=$2
	run sb ls
	[ "$status" -eq 0 ] || fail "ls after a kill at $what: $output"
	if [ -d "$BRIG_SANDBOX_DIR/$id" ]; then
		[[ "$output" == *"$id"* ]] || fail "ls after a kill at $what does not show $id: $output"
	fi
	run sb rm "$id"
	[ "$status" -eq 0 ] || [[ "$output" == *"no sandbox \`$id\`"* ]] ||
		fail "rm after a kill at $what: $output"
	[ -z "$(leftovers)" ] || fail "after a kill at $what and rm: $(leftovers | head -20)"
}

@test "sandbox: $N_CONCURRENT concurrent creates each get a name, an id range and a loop device of their own; rm leaves nothing" {
	seq "$N_CONCURRENT" | xargs -P 16 -I{} sh -c \
		'timeout 120 "$1" --root "$2" sandbox create --rootfs "$3" --memory 64M --pids 64 \
			--data-size 8M "f-$4" >"$5/create.$4" 2>&1 || echo "f-$4: $(cat "$5/create.$4")"' \
		sh "$BRIG" "$SB_ROOT" "$ROOTFS_TREE" {} "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/failed"
	[ ! -s "$BATS_TEST_TMPDIR/failed" ] || fail "creates failed: $(head -5 "$BATS_TEST_TMPDIR/failed")"
	run sb ls
	[ "$(grep -c '^f-' <<<"$output")" -eq "$N_CONCURRENT" ] || fail "ls: $output"

	# One range, one record, one image on a loop device of its own each.
	[ "$(cat "$BRIG_SANDBOX_DIR"/f-*/idrange | sort -u | wc -l)" -eq "$N_CONCURRENT" ]
	[ "$(find "$BRIG_IDRANGE_DIR" -type f | wc -l)" -eq "$N_CONCURRENT" ]
	losetup -a | grep -F "$BRIG_SANDBOX_DIR/" >"$BATS_TEST_TMPDIR/loops"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/loops")" -eq "$N_CONCURRENT" ]
	[ "$(cut -d: -f1 "$BATS_TEST_TMPDIR/loops" | sort -u | wc -l)" -eq "$N_CONCURRENT" ]
	[ "$(grep -o "$BRIG_SANDBOX_DIR/f-[0-9]*/" "$BATS_TEST_TMPDIR/loops" | sort -u | wc -l)" -eq "$N_CONCURRENT" ]

	# Each answers, as its own user, with its own data.
	for i in 1 77 "$N_CONCURRENT"; do
		run sb exec "f-$i" -- sh -c "echo $i >/mnt/data/me; cat /mnt/data/me; ls /mnt/data | wc -l"
		[ "$output" = "$(printf '%s\n1' "$i")" ] || fail "f-$i: $output"
	done

	seq "$N_CONCURRENT" | xargs -P 16 -I{} timeout 60 "$BRIG" --root "$SB_ROOT" sandbox rm "f-{}"
	[ -z "$(leftovers)" ] || fail "left behind: $(leftovers | head -20)"
}

@test "sandbox: twenty creates of one name at once: one sandbox, nineteen clear errors, nothing half-made" {
	seq 20 | xargs -P 20 -I{} sh -c \
		'timeout 120 "$1" --root "$2" sandbox create --rootfs "$3" --memory 64M --data-size 8M f-same \
			>"$4/out.$5" 2>&1; echo $? >"$4/rc.$5"' \
		sh "$BRIG" "$SB_ROOT" "$ROOTFS_TREE" "$BATS_TEST_TMPDIR" {}
	[ "$(cat "$BATS_TEST_TMPDIR"/rc.* | grep -cx 0)" -eq 1 ]
	for f in "$BATS_TEST_TMPDIR"/rc.*; do
		n=${f##*.}
		[ "$(cat "$f")" = 0 ] && continue
		[ "$(wc -l <"$BATS_TEST_TMPDIR/out.$n")" -eq 1 ] || fail "create $n: $(cat "$BATS_TEST_TMPDIR/out.$n")"
		grep -q "f-same" "$BATS_TEST_TMPDIR/out.$n" || fail "create $n: $(cat "$BATS_TEST_TMPDIR/out.$n")"
	done
	# The one that won runs with its data; the losers took no range,
	# loop device or mount of their own.
	run sb exec f-same -- sh -c 'echo ok >/mnt/data/x && cat /mnt/data/x'
	[ "$output" = ok ]
	[ "$(find "$BRIG_IDRANGE_DIR" -type f | wc -l)" -eq 1 ]
	[ "$(losetup -a | grep -cF "$BRIG_SANDBOX_DIR/")" -eq 1 ]
	sb rm f-same
	[ -z "$(leftovers)" ] || fail "left behind: $(leftovers | head -20)"
}

@test "sandbox create killed at each of its steps: ls shows what is left, and rm clears it" {
	local call n killed=0
	for call in $CREATE_STEPS; do
		for ((n = 1; n < 200; n++)); do
			killed_at "$call" "$n" sandbox create --rootfs "$ROOTFS_TREE" --memory 64M \
				--data-size 8M f-kc
			[ "$status" -eq 137 ] || break
			killed=$((killed + 1))
			after_kill f-kc "$call #$n"
		done
		[ "$status" -eq 0 ] || fail "create (past the last $call) failed: status $status: $output"
		sb rm f-kc
	done
	[ "$killed" -ge 60 ] || fail "only $killed steps"
	echo "# create killed at $killed steps" >&3
}

@test "sandbox rm killed at each of its steps: ls shows what is left, and rm again clears it" {
	local call n killed=0
	for call in $RM_STEPS; do
		for ((n = 1; n < 200; n++)); do
			sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 8M f-kr
			sb exec f-kr -- sh -c 'echo data >/mnt/data/x'
			killed_at "$call" "$n" sandbox rm f-kr
			[ "$status" -eq 137 ] || break
			killed=$((killed + 1))
			after_kill f-kr "$call #$n"
		done
		[ "$status" -eq 0 ] || fail "rm (past the last $call) failed: status $status: $output"
		[ -z "$(leftovers)" ] || fail "rm ran whole and left: $(leftovers | head -20)"
	done
	[ "$killed" -ge 20 ] || fail "only $killed steps"
	echo "# rm killed at $killed steps" >&3
}

# ----------------------------------------------------------- a full disk ----

# full_home SIZE: a tmpfs of SIZE as the sandbox home for this test
# (teardown unmounts it).
full_home() {
	FULL=$BATS_TEST_TMPDIR/full
	mkdir -p "$FULL"
	mount -t tmpfs -o size="$1" brig-test-full "$FULL"
	export BRIG_SANDBOX_DIR=$FULL/home
}

# fill DIR LEFT: fills DIR's filesystem but for LEFT KiB.
fill() {
	local free
	rm -f "$1/.filler"
	free=$(df -k --output=avail "$1" | tail -n 1)
	[ "$free" -le "$2" ] || fallocate -l "$(((free - $2) * 1024))" "$1/.filler"
}

# one_clear_line: $output is one line that says the disk is full.
one_clear_line() {
	[ "$(wc -l <<<"$output")" -eq 1 ] || fail "$1: more than one line: $output"
	[[ "$output" == *"No space left on device"* ]] || fail "$1: not a clear error: $output"
}

@test "sandbox create on a host disk that fills up: one clear line, nothing half-made; with room again it works" {
	local left made=0 refused=0
	full_home 64M
	# The formatted image of this size is made (and kept) by a first
	# create; then each fill level leaves less room for the next.
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-room
	sb rm f-room
	for left in 0 8 32 64 128 256 512 1024; do
		fill "$FULL" "$left"
		run sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-full
		if [ "$status" -eq 0 ]; then
			made=$((made + 1))
			sb exec f-full -- sh -c 'echo kept >/mnt/data/x'
			sb rm f-full
		else
			refused=$((refused + 1))
			one_clear_line "create with $left KiB left"
			run sb ls
			[[ "$output" != *f-full* ]] || fail "ls with $left KiB left shows the refused sandbox: $output"
		fi
		[ -z "$(leftovers)" ] || fail "with $left KiB left: $(leftovers | head -20)"
		[ -z "$(ls "$BRIG_SANDBOX_DIR")" ] || fail "with $left KiB left, in the home: $(ls -a "$BRIG_SANDBOX_DIR")"
	done
	[ "$refused" -ge 1 ] || fail "no create was refused"
	# Room again: a create works, and its data is its own.
	rm -f "$FULL/.filler"
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-full
	run sb exec f-full -- sh -c 'ls /mnt/data | grep -v lost+found | wc -l'
	[ "$output" = 0 ] || fail "a new sandbox's data is not empty: $output"
	echo "# $refused of 8 fill levels refused, $made made" >&3
}

@test "sandbox cp onto a host disk that fills up: one clear line, no partial file; into a full sandbox the same" {
	full_home 24M
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-cp
	sb exec f-cp -- sh -c 'head -c 8M /dev/urandom >/mnt/data/big'
	head -c 8M /dev/zero >"$BATS_TEST_TMPDIR/eight"
	fill "$FULL" 1024
	mkdir "$FULL/out"
	run sb cp f-cp:/mnt/data/big "$FULL/out/"
	[ "$status" -ne 0 ] || fail "cp of 8 MiB into 1 MiB succeeded"
	one_clear_line "cp out"
	[ -z "$(ls -A "$FULL/out")" ] || fail "cp out left: $(ls -la "$FULL/out")"
	# Into the sandbox, with its image's disk (the host's) full: refused
	# before a byte is written, and the sandbox's disk stays writable.
	run sb cp "$BATS_TEST_TMPDIR/eight" f-cp:/mnt/data/
	[ "$status" -ne 0 ] || fail "cp in of 8 MiB with 1 MiB left on the host succeeded"
	one_clear_line "cp in, the host full"
	run sb exec f-cp -- sh -c 'ls -A /mnt/data; echo fine >/mnt/data/small && cat /mnt/data/small && rm /mnt/data/small'
	[ "$(squeeze "$output")" = "big fine" ] || fail "after cp in, the host full: $output"
	# The sandbox's own disk full: its quota, not the host's.
	rm -f "$FULL/.filler"
	head -c 40M /dev/zero >"$BATS_TEST_TMPDIR/huge"
	run sb cp "$BATS_TEST_TMPDIR/huge" f-cp:/mnt/data/
	[ "$status" -ne 0 ] || fail "cp of 40 MiB into 32 MiB succeeded"
	one_clear_line "cp in, the sandbox full"
	run sb exec f-cp -- ls -A /mnt/data
	[ "$(squeeze "$output")" = big ] || fail "cp in left: $output"
	# With room, the same copies work.
	sb cp "$BATS_TEST_TMPDIR/eight" f-cp:/mnt/data/
	sb cp f-cp:/mnt/data/big "$FULL/out/"
	[ "$(stat -c %s "$FULL/out/big")" = 8388608 ] || fail "cp out with room: $(ls -l "$FULL/out")"
}

# ------------------------------------------------------------- a reboot ----

# reboot_of ID: what a host reboot does to the sandbox: every process in it
# killed, every mount under its directory gone, its loop device detached,
# the state root (a tmpfs, /run) empty, its cgroups gone. The directory,
# with the data image, stays: it is on the host's disk.
reboot_of() {
	local dir=$BRIG_SANDBOX_DIR/$1 m i
	for i in 1 2 3; do
		find /sys/fs/cgroup -type d -name "$1" -exec cat {}/cgroup.procs \; 2>/dev/null |
			xargs -r kill -9 2>/dev/null || true
		sleep 0.3
	done
	awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r m; do umount -l "$m"; done
	losetup -j "$dir/data.img" -O NAME -n | xargs -r -n 1 losetup -d
	rm -rf "${SB_ROOT:?}/$1"
	find /sys/fs/cgroup -depth -type d -name "$1" -exec rmdir {} + 2>/dev/null || true
}

@test "sandbox after a host reboot: ls says broken; create brings it back with its data; rm clears it" {
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-rb
	sb exec f-rb -- sh -c 'mkdir -p /mnt/data/work && echo precious >/mnt/data/work/keep'
	reboot_of f-rb
	run sb ls
	[ "$status" -eq 0 ] || fail "ls after the reboot: $output"
	grep -qE '^f-rb +broken ' <<<"$output" || fail "ls after the reboot: $output"
	run sb exec f-rb -- true
	[ "$status" -ne 0 ] || fail "exec into a sandbox that is not running succeeded"
	[ "$(wc -l <<<"$output")" -eq 1 ] || fail "exec after the reboot, more than one line: $output"

	# Started again under its name: its data as it was, its limits, its
	# user; the data image is the same file.
	ino=$(stat -c %i "$BRIG_SANDBOX_DIR/f-rb/data.img")
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 32M f-rb
	[ "$(stat -c %i "$BRIG_SANDBOX_DIR/f-rb/data.img")" = "$ino" ] || fail "a new data image"
	run sb exec f-rb -- sh -c 'cat /mnt/data/work/keep; id -u; echo more >>/mnt/data/work/keep'
	[ "$(squeeze "$output")" = "precious 1000" ] || fail "after the reboot: $output"
	run sb ls
	grep -qE '^f-rb +running ' <<<"$output" || fail "ls after the new create: $output"
	sb rm f-rb
	[ -z "$(leftovers)" ] || fail "rm after the reboot left: $(leftovers | head -20)"
	[ ! -e "$BRIG_SANDBOX_DIR/f-rb" ] || fail "rm left the directory"
}
