#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031,SC2154 # inner shells' $vars, bats' own variables
# The sandbox root filesystem (rootfs/): what `make rootfs` builds, checked
# in the tree at $ROOTFS_DIR (default /var/lib/brig/rootfs). The tree is
# built here when it is missing or out of date (about a minute); CI builds it
# before the tests with `make rootfs`.

bats_require_minimum_version 1.5.0

TOP=${top_srcdir:-$BATS_TEST_DIRNAME/../..}
R=${ROOTFS_DIR:-/var/lib/brig/rootfs}
INIT=${BRIG_INIT:-$(dirname "${BRIG:-$TOP/brig}")/brig-init}

setup_file() {
	set -o pipefail
	"$TOP/rootfs/build.sh" "$R" | sed "s/^/# /" >&3
}

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/brig-rootfs.XXXXXX")
}

teardown() {
	rm -rf "$T"
}

@test "rootfs: the non-root user sandbox is 1000:1000 with home /home/sandbox and bash" {
	run grep '^sandbox:' "$R/etc/passwd"
	[ "$output" = "sandbox:x:1000:1000:brig sandbox:/home/sandbox:/bin/bash" ]
	run grep '^sandbox:' "$R/etc/group"
	[ "$output" = "sandbox:x:1000:" ]
	[ "$(stat -c '%u:%g' "$R/home/sandbox")" = 1000:1000 ]
}

@test "rootfs: /mnt/data is empty, 0755, owned by 1000:1000" {
	[ "$(stat -c '%a %u:%g' "$R/mnt/data")" = "755 1000:1000" ]
	[ -z "$(ls -A "$R/mnt/data")" ]
}

@test "rootfs: python3 and bash of Debian 12 run in the tree" {
	run chroot "$R" /usr/bin/python3 -c 'import ssl, sys; print(sys.version_info[:2])'
	[ "$status" -eq 0 ]
	[ "$output" = "(3, 11)" ]
	run chroot "$R" /bin/bash -c 'echo $BASH_VERSION; . /etc/os-release; echo $VERSION_ID'
	[[ "${lines[0]}" == 5.2.* ]]
	[ "${lines[1]}" = 12 ]
}

@test "rootfs: jemalloc is where /etc/brig/jemalloc-path says, and preloads" {
	[ "$(cat "$R/etc/brig/jemalloc-path")" = /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ]
	[ -e "$R/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" ]
	# Only a loaded jemalloc reads MALLOC_CONF and complains about a bad pair.
	run --separate-stderr chroot "$R" env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
		MALLOC_CONF=no_such_option:true /usr/bin/python3 -c 'print("ran")'
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
	[[ "$stderr" == *"<jemalloc>: Invalid conf pair: no_such_option:true"* ]]
}

@test "rootfs: the tree's jemalloc is Debian's source built without its C++ operators or profiling" {
	lib=$(cat "$R/etc/brig/jemalloc-path")
	# No libstdc++, libgcc_s or libm for every process that preloads it;
	# Debian's file is diverted beside it, and the build says what it is.
	run readelf -d "$R$lib"
	[ "$status" -eq 0 ]
	[[ "$output" == *"NEEDED"*"libc.so.6"* ]]
	[[ "$output" != *"libstdc++"* ]]
	[[ "$output" != *"libgcc_s"* ]]
	[[ "$output" != *"libm.so"* ]]
	[ "$(chroot "$R" dpkg-divert --truename "$lib")" = "$lib.debian" ]
	run readelf -d "$R$lib.debian"
	[[ "$output" == *"libstdc++"* ]]
	grep -q "^jemalloc $(chroot "$R" dpkg-query -W -f '${source:Version}' libjemalloc2) from its Debian source.*without --enable-prof.*--disable-cxx" \
		"$R/etc/brig/jemalloc-build"
	# A C++ program still allocates through it: new calls malloc.
	run chroot "$R" env LD_PRELOAD="$lib" MALLOC_CONF=stats_print:true python3 -c 'print("ran")'
	[ "$status" -eq 0 ]
	[[ "$output" == *"Begin jemalloc statistics"* ]]
	# Heap profiling is Debian's file's: asked of this one, it says no.
	run --separate-stderr chroot "$R" env LD_PRELOAD="$lib" MALLOC_CONF=prof:true true
	[[ "$stderr" == *"Invalid conf pair: prof:true"* ]]
	run --separate-stderr chroot "$R" env LD_PRELOAD="$lib.debian" MALLOC_CONF=prof:true true
	[ "$stderr" = "" ]
}

@test "rootfs: CA certificates, the package record, the default init.conf, the brig-init mount point" {
	[ -s "$R/etc/ssl/certs/ca-certificates.crt" ]
	sed 's/#.*//' "$TOP/rootfs/packages.txt" | while read -r pkg; do
		[ -z "$pkg" ] || grep -q "^$pkg " "$R/etc/brig/packages.installed"
	done
	[ "$(grep -vc '^#' "$R/etc/brig/init.conf")" -eq 0 ]
	[ -f "$R/usr/sbin/brig-init" ]
	[ ! -s "$R/usr/sbin/brig-init" ]
}

@test "rootfs: a rebuild with the same package list and scripts does nothing" {
	before=$(stat -c %i "$R")
	want=$(cat "$TOP/rootfs/packages.txt" "$TOP/rootfs/build.sh" "$TOP/rootfs/mirror.sh" \
		"$TOP/rootfs/jemalloc.sh" | sha256sum | cut -d' ' -f1)
	[ "$(cat "$R/etc/brig/rootfs.stamp")" = "$want" ]
	run "$TOP/rootfs/build.sh" "$R"
	[ "$status" -eq 0 ]
	[ "$output" = "rootfs: $R is up to date" ]
	[ "$(stat -c %i "$R")" = "$before" ]
}

@test "rootfs: brig-init runs in the tree as PID 1 and finds the user sandbox in its passwd" {
	[ -x "$INIT" ]
	# A private mount namespace: the shared tree itself is not touched.
	run --separate-stderr unshare --mount --pid --fork sh -c '
		set -e
		R=$1
		mount --bind "$2" "$R/usr/sbin/brig-init"
		mount -t tmpfs tmpfs "$R/tmp"
		mount -t proc proc "$R/proc"
		printf "[program:who]\ncommand = sh -c \"id -un > /tmp/who.new; id -u >> /tmp/who.new; mv /tmp/who.new /tmp/who\"\nuser = sandbox\nautorestart = false\n" >"$R/tmp/init.conf"
		chmod 1777 "$R/tmp"
		exec chroot "$R" /usr/sbin/brig-init --config /tmp/init.conf -- /bin/bash -c \
			"while [ ! -s /tmp/who ]; do sleep 0.05; done; cat /tmp/who; echo pid \$\$ parent \$PPID"
	' sh "$R" "$INIT"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = sandbox ]
	[ "${lines[1]}" = 1000 ]
	[[ "${lines[2]}" =~ ^pid\ [0-9]+\ parent\ 1$ ]]
	[ ! -s "$R/usr/sbin/brig-init" ]
}

@test "rootfs: the mirror is read from apt's sources, one-line and deb822" {
	mkdir -p "$T/apt/sources.list.d"
	printf '# deb http://commented.example/debian bookworm main\ndeb-src http://src.example/debian bookworm main\n' >"$T/apt/sources.list"
	cat >"$T/apt/sources.list.d/a.sources" <<-'EOF'
		Types: deb
		URIs: http://disabled.example/debian
		Suites: bookworm
		Components: main
		Enabled: no

		Types: deb deb-src
		URIs: http://mirror.example/debian
		Suites: bookworm-updates
		 bookworm
		Components: main
	EOF
	run env APT_DIR="$T/apt" "$TOP/rootfs/mirror.sh"
	[ "$status" -eq 0 ]
	[ "$output" = http://mirror.example/debian ]

	printf 'deb [arch=amd64 signed-by=/k.gpg] https://one.example/debian bookworm main\n' >"$T/apt/sources.list"
	run env APT_DIR="$T/apt" "$TOP/rootfs/mirror.sh"
	[ "$output" = https://one.example/debian ]

	rm "$T/apt/sources.list" "$T/apt/sources.list.d/a.sources"
	run --separate-stderr env APT_DIR="$T/apt" "$TOP/rootfs/mirror.sh"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "rootfs: no \"deb\" entry for suite bookworm in $T/apt/sources.list"* ]]
}

@test "rootfs: build.sh refuses an unknown option and an unknown profile" {
	run --separate-stderr "$TOP/rootfs/build.sh" --fast
	[ "$status" -eq 2 ]
	[ "$stderr" = "rootfs: unknown option --fast (usage: rootfs/build.sh [--image] [--profile small|full] [DIR])" ]
	run --separate-stderr "$TOP/rootfs/build.sh" --profile ../x "$T/t"
	[ "$status" -eq 2 ]
	[ "$stderr" = "rootfs: unknown profile \`../x' (no rootfs/packages-../x.txt)" ]
	PROFILE=nosuch run --separate-stderr "$TOP/rootfs/build.sh" "$T/t"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"unknown profile \`nosuch'"* ]]
	[ ! -e "$T/t" ]
}

@test "rootfs: the full profile's tree has every package of both lists, is up to date, and PHP skips the preload" {
	local F=${ROOTFS_FULL_DIR:-/var/lib/brig/rootfs-full}
	[ -d "$F/usr/bin" ] || fail "no full tree at $F: run \`make rootfs PROFILE=full\`"
	sed 's/#.*//' "$TOP/rootfs/packages.txt" "$TOP/rootfs/packages-full.txt" | tr -s ' \t' '\n' |
		while read -r pkg; do
			[ -z "$pkg" ] || grep -q "^$pkg " "$F/etc/brig/packages.installed" || fail "$pkg not installed"
		done
	run "$TOP/rootfs/build.sh" --profile full "$F"
	[ "$output" = "rootfs: $F is up to date" ]
	want=$(cat "$TOP/rootfs/packages.txt" "$TOP/rootfs/packages-full.txt" "$TOP/rootfs/build.sh" \
		"$TOP/rootfs/mirror.sh" "$TOP/rootfs/jemalloc.sh" | sha256sum | cut -d' ' -f1)
	[ "$(cat "$F/etc/brig/rootfs.stamp")" = "$want" ]
	grep -q "unset LD_PRELOAD" "$F/usr/bin/php8.2"
	[ -x "$F/usr/bin/php8.2.distrib" ]
	[ ! -e "$F/usr/sbin/policy-rc.d" ]
	[ -z "$(ls "$F/var/cache/apt/archives/"*.deb 2>/dev/null)" ]
}
