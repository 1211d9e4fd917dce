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

setup() {
	ROOT=$SB_ROOT
	MARK=none
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
}

teardown() {
	sb ls 2>/dev/null | awk 'NR > 1 { print $1 }' |
		xargs -r -P 8 -I{} timeout 60 "$BRIG" --root "$SB_ROOT" sandbox rm {} >/dev/null 2>&1 || true
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
