#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# The `full` tree (make rootfs PROFILE=full, rootfs/packages-full.txt): the
# toolset a user of the modelled box reaches for, used the way they use it,
# in a sandbox with limits. Needs the full tree at /var/lib/brig/rootfs-full
# (or $BRIG_SANDBOX_ROOTFS_FULL): scripts/test.sh builds it before
# `make check`, which runs this file on the host.

load helpers

FULL_TREE=${BRIG_SANDBOX_ROOTFS_FULL:-/var/lib/brig/rootfs-full}
ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$FULL_TREE/usr/bin" ] || return 0
	sandbox_file_env
	local tree=full
	[ "$FULL_TREE" = /var/lib/brig/rootfs-full ] || tree=$FULL_TREE
	timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$tree" \
		--memory 2G --cpus 1 --data-size 256M f1 >"$BATS_FILE_TMPDIR/f1.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in f1 q1 q2; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	umount "$BATS_FILE_TMPDIR/ship" 2>/dev/null || true
	stop_file_proxies
}

setup() {
	[ -d "$FULL_TREE/usr/bin" ] || fail "no full tree at $FULL_TREE: run \`make rootfs PROFILE=full\`"
	require_sandboxes f1
}

@test "full tree: numpy, pandas and matplotlib draw a PNG chart into /mnt/data" {
	run sb exec f1 -- python3 -c '
import numpy as np, pandas as pd, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import scipy, sklearn, PIL
df = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) ** 2})
df.plot(x="x", y="y")
plt.savefig("/mnt/data/chart.png")
print(int(df.y.sum()))'
	[ "$status" -eq 0 ] || fail "$output"
	[ "${lines[-1]}" = 285 ]
	sb cp f1:/mnt/data/chart.png "$BATS_TEST_TMPDIR/chart.png"
	[ "$(head -c 8 "$BATS_TEST_TMPDIR/chart.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
	run sb exec f1 -- python3 -c 'from PIL import Image; im = Image.open("/mnt/data/chart.png"); print(im.format, im.size[0] > 100)'
	[ "$output" = "PNG True" ]
}

@test "full tree: C, C++, Go and Java programs compile and run" {
	run sb exec f1 -- sh -c '
cd /tmp
printf "#include <stdio.h>\nint main(void) { printf(\"c %%d\\\\n\", 6 * 7); return 0; }\n" >a.c
gcc -O2 -o a a.c && ./a
printf "#include <iostream>\nint main() { std::cout << \"c++ \" << 6 * 7 << std::endl; }\n" >b.cc
g++ -o b b.cc && ./b
printf "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"go\", 6*7) }\n" >g.go
go build -o g g.go && ./g
printf "class J { public static void main(String[] a) { System.out.println(\"java \" + 6 * 7); } }\n" >J.java
javac J.java && java -cp . J'
	[ "$status" -eq 0 ] || fail "$output"
	[ "${lines[*]: -4}" = "c 42 c++ 42 go 42 java 42" ]
}

@test "full tree: node, npm, ruby, php and perl run; PHP without the preload, the rest with it" {
	run sb exec f1 -- sh -c 'node -e "console.log(6 * 7)"; npm --version >/dev/null && echo npm; ruby -e "puts 6 * 7"; php -r "echo 6 * 7, PHP_EOL;"; perl -e "print 6 * 7, qq(\n)"'
	[ "$status" -eq 0 ] || fail "$output"
	[ "${lines[*]}" = "42 npm 42 42 42" ]
	run sb exec f1 -- sh -c 'php -r "echo getenv(\"LD_PRELOAD\") === false ? \"none\" : \"set\", PHP_EOL;"; node -e "console.log(process.env.LD_PRELOAD)"'
	[ "${lines[0]}" = none ]
	[[ "${lines[1]}" == *libjemalloc.so.2 ]]
	run sb exec f1 -- sh -c 'for t in git curl wget jq zip unzip file; do command -v $t >/dev/null || echo missing $t; done'
	[ -z "$output" ]
}

@test "full tree: ps shows brig-init as PID 1; nproc and free see the limits" {
	run sb exec f1 -- ps -eo pid,ppid,user,comm,args
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^\ +1\ +0\ sandbox\ +brig-init ]] || fail "$output"
	run sb exec f1 -- nproc
	[ "$output" = 1 ]
	run sb exec f1 -- free -m
	total=$(echo "$output" | awk '/^Mem:/ { print $2 }')
	[ "$total" -ge 2000 ] && [ "$total" -le 2048 ] || fail "free -m: $output"
}

@test "sandbox create --rootfs NAME: an unknown tree is one line naming it, and nothing is left" {
	run sb create --rootfs nosuch f2
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"--rootfs nosuch: no tree at /var/lib/brig/rootfs-nosuch (build it: make rootfs PROFILE=nosuch)"* ]]
	run sb create --rootfs "../x" f2
	[ "$status" -eq 1 ]
	[ ! -e "$BRIG_SANDBOX_DIR/f2" ]
	[ ! -e "$SB_ROOT/f2" ]
}

@test "a tree shipped as a squashfs image is mounted read-only once and shared" {
	local img=$BATS_FILE_TMPDIR/ship
	# The small tree without its largest dirs: enough for sh and jemalloc.
	mksquashfs "$ROOTFS_TREE" "$img.squashfs" -quiet -noappend -comp gzip \
		-e usr/share usr/lib/python3 usr/lib/python3.11 var/cache var/lib >/dev/null
	sb create --rootfs "$img.squashfs" --data-size 16M q1
	sb create --rootfs "$img" --data-size 16M q2
	[ "$(grep -c " $img squashfs ro," /proc/mounts)" = 1 ]
	run sb exec q2 -- sh -c 'cat /etc/debian_version; touch /etc/x 2>&1'
	[[ "${lines[0]}" =~ ^12\. ]]
	[[ "${lines[1]}" == *"Read-only file system"* ]]
	sb rm q1
	sb rm q2
	umount "$img"
	refute sh -c "losetup -a | grep -q '$img.squashfs'"
}
