#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2034,SC2154 # jq programs, bats' own variables
# Shared by every integration test.
#
# Each test gets its own busybox bundle ($BUNDLE, rootfs in $ROOTFS), its own
# state directory ($ROOT, passed as --root), a container id ($CID), and a
# marker ($MARK) put into the environment of brig and of the container
# process, so that teardown can prove that no process, mount or state
# directory outlives the test.
#
# BRIG names the binary under test. The suite also runs against runc
# (BRIG=/usr/sbin/runc) to validate the tests themselves; assertions that only
# brig is expected to meet carry a "brig-specific" comment.

: "${BRIG:=${top_srcdir:-$BATS_TEST_DIRNAME/../..}/brig}"
BUSYBOX=${BUSYBOX:-/bin/busybox}
# `run --separate-stderr` needs bats 1.5.
bats_require_minimum_version 1.5.0
# A generous upper bound for one brig command, so a hang fails one test
# instead of stalling the whole suite.
BRIG_TEST_TIMEOUT=${BRIG_TEST_TIMEOUT:-60}

# True when the binary under test is runc (used only to skip brig-specific
# checks that runc 1.1 is known not to meet).
is_runc() {
	[[ "$(basename "$BRIG")" == runc* ]]
}

# ---------------------------------------------------------------- setup ----

setup() {
	setup_bundle
}

teardown() {
	teardown_bundle
}

# busybox_applets DIR: busybox in DIR, with a link to it for each of its
# applets. One process makes the ~400 links: in the test VM a process start
# costs ~40 times the host's, and a loop of ln took half a minute there.
# `busybox --list` names busybox itself: skipped, or the binary would be
# replaced by a link to itself.
busybox_applets() {
	cp "$BUSYBOX" "$1/busybox" &&
		"$BUSYBOX" --list | grep -vx busybox |
		(cd "$1" && xargs perl -e 'for (@ARGV) { symlink("busybox", $_) or die "$_: $!\n" }')
}

# Builds the busybox root filesystem once per bats run; tests copy it.
build_pristine_rootfs() {
	PRISTINE_ROOTFS=$BATS_RUN_TMPDIR/rootfs-pristine
	[ -d "$PRISTINE_ROOTFS" ] && return 0

	local tmp
	tmp=$(mktemp -d "$BATS_RUN_TMPDIR/rootfs.XXXXXX")
	mkdir -p "$tmp"/{bin,etc,proc,sys,dev,tmp,root,home/user,mnt}
	chmod 1777 "$tmp/tmp"
	chmod 755 "$tmp"
	busybox_applets "$tmp/bin"
	cat >"$tmp/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		user:x:1000:1000:user:/home/user:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$tmp/etc/group" <<-'EOF'
		root:x:0:
		user:x:1000:
		extra:x:2000:user
		nogroup:x:65534:
	EOF
	chown 1000:1000 "$tmp/home/user"
	# Another test file may have won the race; either copy is fine.
	mv -T "$tmp" "$PRISTINE_ROOTFS" 2>/dev/null || rm -rf "$tmp"
}

setup_bundle() {
	ROOT=$BATS_TEST_TMPDIR/state
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	ROOTFS=$BUNDLE/rootfs
	CID=ct$BATS_SUITE_TEST_NUMBER-$RANDOM
	MARK=brigtest-$$-$BATS_SUITE_TEST_NUMBER-$RANDOM
	CT_OUT=$BATS_TEST_TMPDIR/container.out
	CT_ERR=$BATS_TEST_TMPDIR/container.err
	: >"$CT_OUT"
	: >"$CT_ERR"

	# bats makes its temp dirs 0700; a container whose root is mapped to
	# another uid (user namespace) must still reach its rootfs.
	chmod a+x "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$BATS_TEST_TMPDIR" 2>/dev/null || true
	build_pristine_rootfs
	mkdir -p "$BUNDLE"
	cp -a "$PRISTINE_ROOTFS" "$ROOTFS"
	(cd "$BUNDLE" && "$BRIG" spec) || fail "\`$BRIG spec\` failed in $BUNDLE"
	update_config '.process.terminal = false
		| .process.args = ["true"]
		| .process.env += ["BRIG_TEST_MARK=" + $mark]' --arg mark "$MARK"
	# Like a user would: commands without --bundle use the current directory.
	cd "$BUNDLE"
}

# update_config JQ_EXPR [jq options...]: edits $BUNDLE/config.json in place.
update_config() {
	local expr=$1 tmp
	shift
	tmp=$(mktemp "$BATS_TEST_TMPDIR/config.XXXXXX")
	jq "$@" "$expr" "$BUNDLE/config.json" >"$tmp" || fail "update_config: jq '$expr' failed"
	mv "$tmp" "$BUNDLE/config.json"
}

# json_array STRING...: a JSON array of the strings (which may hold newlines
# or start with "-", so neither `jq -R` per line nor `jq --args` will do).
json_array() {
	local a
	for a in "$@"; do
		printf '%s' "$a" | jq -Rs .
	done | jq -cs .
}

# set_args ARG...: the container process's argv.
set_args() {
	local args
	args=$(json_array "$@")
	update_config '.process.args = $a' --argjson a "$args"
}

# add_mount DEST TYPE SOURCE [OPTION...]: appends a mount to the config.
add_mount() {
	local dest=$1 type=$2 src=$3 opts
	shift 3
	opts=$(json_array "$@")
	update_config '.mounts += [{destination: $d, type: $t, source: $s, options: $o}]' \
		--arg d "$dest" --arg t "$type" --arg s "$src" --argjson o "$opts"
}

# add_bind_mount HOST_DIR DEST [OPTION...]: a bind mount of a host path.
add_bind_mount() {
	local src=$1 dest=$2
	shift 2
	add_mount "$dest" bind "$src" rbind "$@"
}

# ------------------------------------------------------------- running ----

# brig ARGS...: the binary under test with this test's --root.
brig() {
	BRIG_TEST_MARK=$MARK timeout -k 5 "$BRIG_TEST_TIMEOUT" "$BRIG" --root "$ROOT" "$@"
}

# brig_detached ARGS...: for `create` and `run -d`. The container keeps the
# stdio it inherits, which would make bats' `run` wait for it to exit; send
# it to $CT_OUT / $CT_ERR instead. brig's own stderr is replayed on stderr.
brig_detached() {
	detached brig "$@"
}

# detached COMMAND ARGS...: the same for any command that leaves a container.
detached() {
	local rc=0
	"$@" </dev/null >"$CT_OUT" 2>"$CT_ERR" || rc=$?
	cat "$CT_ERR" >&2
	return "$rc"
}

fail() {
	echo "$@" >&2
	return 1
}

# squeeze TEXT...: the words of TEXT joined by single spaces.
squeeze() {
	# shellcheck disable=SC2048 # word splitting is the point
	echo $*
}

# refute CMD...: fails when CMD succeeds. A bare `! CMD` does not fail a bats
# test unless it is the test's last command.
refute() {
	if "$@"; then
		fail "expected to fail: $*"
	fi
}

# Status of a container as `state` reports it, or "" when it has none.
container_status() {
	brig state "$1" 2>/dev/null | jq -r '.status // empty' 2>/dev/null
}

container_pid() {
	brig state "$1" | jq -r .pid
}

# wait_for_status ID STATUS: polls `state` for up to ~10 seconds.
wait_for_status() {
	local id=$1 want=$2 got="" i
	for i in $(seq 100); do
		got=$(container_status "$id")
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	fail "container $id: status is '$got', expected '$want'"
}

# wait_for_file FILE: until FILE exists and is not empty (~10 seconds).
wait_for_file() {
	local i
	for i in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 did not appear"
}

# wait_for_line FILE LINE: until FILE has LINE (~10 seconds).
wait_for_line() {
	local i
	for i in $(seq 100); do
		grep -qxF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "'$2' did not appear in $1: $(cat "$1" 2>/dev/null)"
}

# Processes started by this test's brig (init, container, hooks…): they
# inherit $MARK through the environment. runc re-executes its init with an
# environment of its own, which names the state directory instead.
marked_pids() {
	grep -lzxE -e "BRIG_TEST_MARK=$MARK" -e "_LIBCONTAINER_STATEDIR=$ROOT/.*" \
		/proc/[0-9]*/environ 2>/dev/null |
		sed -e 's,^/proc/,,' -e 's,/environ$,,' | grep -vx "$$" || true
}

# Mounts in the host's namespace anywhere under this test's directories.
leaked_mounts() {
	grep -F "$BATS_TEST_TMPDIR" /proc/self/mountinfo || true
}

# assert_no_leftovers ID: no state dir, no mount, no process. Used after a
# command that must fail without side effects.
assert_no_leftovers() {
	local id=$1 i pids
	case $id in
	"" | . | .. | */*)
		# Not a name of its own under $ROOT: nothing may be there at all.
		[ -z "$(ls -A "$ROOT" 2>/dev/null)" ] || fail "$ROOT is not empty: $(ls -A "$ROOT")"
		;;
	*)
		[ ! -e "$ROOT/$id" ] || fail "state directory $ROOT/$id was left behind"
		;;
	esac
	[ -z "$(leaked_mounts)" ] || fail "mounts were left behind: $(leaked_mounts)"
	for i in $(seq 20); do
		pids=$(marked_pids)
		[ -z "$pids" ] && break
		sleep 0.1
	done
	[ -z "$pids" ] || fail "processes were left behind: $(for p in $pids; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"
	# A leaked container would still be listed.
	if [ -d "$ROOT" ] && [ -n "$id" ]; then
		if brig list -q 2>/dev/null | grep -qxF -- "$id"; then
			fail "$id is still listed"
		fi
	fi
}

# assert_one_line_error KEYWORD...: after `run --separate-stderr`, the command
# failed, printed one line on stderr, and that line names every KEYWORD
# (KEYWORD "brig:word" is checked against brig only).
assert_one_line_error() {
	local word
	[ "$status" -ne 0 ] || fail "expected failure, got status 0; stdout: $output"
	[ -n "$stderr" ] || fail "expected an error message on stderr"
	for word in "$@"; do
		# brig-specific: a "brig:" prefix marks a word that runc's
		# message does not contain.
		if [[ "$word" == brig:* ]]; then
			is_runc && continue
			word=${word#brig:}
		fi
		[[ "$stderr" == *"$word"* ]] || fail "stderr does not mention '$word': $stderr"
	done
	# brig-specific: exactly one line per error (runc logs may differ).
	if ! is_runc; then
		[ "${#stderr_lines[@]}" -eq 1 ] || fail "expected one stderr line, got ${#stderr_lines[@]}: $stderr"
	fi
}

teardown_bundle() {
	[ -n "${ROOT:-}" ] || return 0
	local d id pids problems=""

	if [ -d "$ROOT" ]; then
		for d in "$ROOT"/*/; do
			[ -d "$d" ] || continue
			id=$(basename "$d")
			brig delete --force "$id" >/dev/null 2>&1 || true
			[ ! -e "$ROOT/$id" ] || problems+="state of $id survived delete --force; "
		done
	fi

	for _ in $(seq 30); do
		pids=$(marked_pids)
		[ -z "$pids" ] && break
		sleep 0.1
	done
	if [ -n "$pids" ]; then
		problems+="processes left: $pids; "
		kill -9 $pids 2>/dev/null || true
	fi

	if [ -n "$(leaked_mounts)" ]; then
		problems+="mounts left: $(leaked_mounts | awk '{print $5}' | tr '\n' ' '); "
		# Unmount before bats removes the directory: rm -rf through a
		# leaked bind mount would delete the host files behind it.
		leaked_mounts | awk '{print $5}' | sort -r | while read -r d; do
			umount -l "$d" 2>/dev/null || true
		done
	fi

	[ -z "$problems" ] || fail "teardown: $problems"
}

# forget_selfexe_view FILE: unmounts the read-only view of the brig binary
# FILE that brig keeps in /run/brig/.exe-ro@ (named after its device and
# inode, in hex), for a copy of brig that a test is about to delete.
forget_selfexe_view() {
	local view
	view=/run/brig/.exe-ro@/$(stat -c %D "$1")-$(printf %x "$(stat -c %i "$1")")
	umount "$view" 2>/dev/null && rm -f "$view"
	return 0
}

# ------------------------------------------------------------- cgroups ----

# The cgroup v2 hierarchy: /sys/fs/cgroup on a pure v2 host, the unified
# mount on a hybrid one.
cgroup_v2_root() {
	if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup
	else
		echo /sys/fs/cgroup/unified
	fi
}

# True when the v2 hierarchy offers the controller.
has_controller() {
	grep -qw "$1" "$(cgroup_v2_root)/cgroup.controllers"
}

# container_cgroup ID [CONTROLLER]: the absolute cgroup directory brig
# recorded for it. On v1 and hybrid hosts brig records one directory per
# hierarchy (a line each): the one that binds CONTROLLER ("memory",
# "freezer"), or without one the hybrid host's v2 directory, else the first.
container_cgroup() {
	jq -r '.cgroupPath' "$ROOT/$1/state.json" | awk -v c="${2:-}" '
		function binds(path,    rest, k, names, i) {
			rest = substr(path, length("/sys/fs/cgroup/") + 1)
			k = split(substr(rest, 1, index(rest "/", "/") - 1), names, ",")
			for (i = 1; i <= k; i++) if (names[i] == c) return 1
			return 0
		}
		NF { n++; line[n] = $0 }
		NF && c != "" && binds($0) { print; found = 1; exit }
		NF && c == "" && $0 ~ "^/sys/fs/cgroup/unified/" { print; found = 1; exit }
		END { if (!found && n) print line[1] }'
}

# True on a host whose cgroups are v1 hierarchies (hybrid or legacy).
cgroup_is_v1() {
	[ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]
}

# v1_hierarchy CONTROLLER: "ROOT MOUNTPOINT" of the v1 hierarchy that binds
# CONTROLLER ("memory", "name=systemd"), from mountinfo; nothing if none.
v1_hierarchy() {
	awk -v c="$1" '{
		for (i = 7; $i != "-"; i++) ;
		if ($(i + 1) != "cgroup") next
		n = split($(i + 3), opts, ",")
		for (k = 1; k <= n; k++) if (opts[k] == c) { print $4, $5; exit }
	}' /proc/self/mountinfo
}

# host_has_controller CONTROLLER: true when a container can be limited
# with it here: a v1 hierarchy binds it, or the v2 tree offers it.
host_has_controller() {
	if cgroup_is_v1; then
		[ -n "$(v1_hierarchy "$1")" ]
	else
		grep -qw "$1" /sys/fs/cgroup/cgroup.controllers
	fi
}

# pid_cgroup_dir PID CONTROLLER: the directory, seen from the host, that
# holds CONTROLLER's files ("memory", "pids", "freezer") for PID's cgroup:
# its one cgroup on v2, its cgroup in the hierarchy that binds CONTROLLER
# on v1.
pid_cgroup_dir() {
	local pid=$1 c=$2 path mount
	if ! cgroup_is_v1; then
		path=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
		echo "/sys/fs/cgroup${path%/}"
		return
	fi
	path=$(awk -F: -v c="$c" '{ n = split($2, names, ",")
		for (i = 1; i <= n; i++) if (names[i] == c) print $3 }' "/proc/$pid/cgroup")
	mount=$(v1_hierarchy "$c")
	if [ -z "$path" ] || [ -z "$mount" ]; then
		fail "pid $pid: no cgroup v1 hierarchy binds $c"
		return
	fi
	# /proc/PID/cgroup has the path from the hierarchy's root, and a mount
	# of a cgroup below that root shows the tree from there.
	path=${path#"${mount%% *}"}
	path=/${path#/}
	echo "${mount#* }${path%/}"
}

# pid_cgroup_file PID CONTROLLER FILE: a file that has one name on both
# layouts (pids.max, pids.current, pids.events), for PID's cgroup.
pid_cgroup_file() {
	cat "$(pid_cgroup_dir "$1" "$2")/$3"
}

# pid_memory_limit PID: the memory limit of PID's cgroup in bytes, or "max"
# (v2's memory.max; v1's memory.limit_in_bytes, whose "unlimited" is the
# largest count of pages, just below 2^63).
pid_memory_limit() {
	local v
	if ! cgroup_is_v1; then
		pid_cgroup_file "$1" memory memory.max
		return
	fi
	v=$(pid_cgroup_file "$1" memory memory.limit_in_bytes) || return
	[ "$v" -lt 4611686018427387904 ] || v=max
	echo "$v"
}

# pid_pids_limit PID: pids.max of PID's cgroup, a number or "max".
pid_pids_limit() {
	pid_cgroup_file "$1" pids pids.max
}

# pid_cpu_max PID: the cpu quota of PID's cgroup as v2's cpu.max says it,
# "QUOTA PERIOD" in microseconds, QUOTA "max" for none (v1: -1 in
# cpu.cfs_quota_us).
pid_cpu_max() {
	local d quota
	d=$(pid_cgroup_dir "$1" cpu)
	if ! cgroup_is_v1; then
		cat "$d/cpu.max"
		return
	fi
	quota=$(cat "$d/cpu.cfs_quota_us") || return
	[ "$quota" != -1 ] || quota=max
	echo "$quota $(cat "$d/cpu.cfs_period_us")"
}

# pid_frozen PID: true when PID's cgroup is frozen (v2: "frozen 1" in
# cgroup.events; v1: FROZEN in freezer.state).
pid_frozen() {
	if ! cgroup_is_v1; then
		grep -qx 'frozen 1' "$(pid_cgroup_dir "$1" freezer)/cgroup.events"
	else
		[ "$(pid_cgroup_file "$1" freezer freezer.state)" = FROZEN ]
	fi
}

# ------------------------------------------------------ host programs ----

# use_host_usr: the host's /usr, read-only, at the container's /usr (with
# /lib and /lib64 links into it, as on a merged-/usr host), so a test can
# run python3 or bash in the busybox image.
use_host_usr() {
	ln -sfn usr/lib "$ROOTFS/lib"
	ln -sfn usr/lib64 "$ROOTFS/lib64"
	mkdir -p "$ROOTFS/usr"
	add_bind_mount /usr /usr ro
}

# ------------------------------------------------------------ sandboxes ----

# sandbox_file_env: in a sandbox file's setup_file, a state root (SB_ROOT),
# a sandbox home (BRIG_SANDBOX_DIR) and a packages proxy's directory and log
# (BRIG_EGRESS_DIR, BRIG_EGRESS_LOG, unless the file chose its own) of the
# file's own, brig-init beside $BRIG unless BRIG_INIT names one, and bats's
# temp dirs (0700) made searchable: a sandbox's root, in its own user
# namespace, must reach its tree and data in the home below them. The
# file's teardown_file stops its proxy (stop_file_proxies): none is left
# running on the host after the tests.
sandbox_file_env() {
	export SB_ROOT=$BATS_FILE_TMPDIR/state
	export BRIG_SANDBOX_DIR=$BATS_FILE_TMPDIR/sandboxes
	if [ -z "${BRIG_EGRESS_DIR:-}" ]; then
		export BRIG_EGRESS_DIR=$BATS_FILE_TMPDIR/egress
		export BRIG_EGRESS_LOG=$BATS_FILE_TMPDIR/egress.log
	fi
	chmod a+x "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/file" "$BATS_FILE_TMPDIR"
	if [ -z "${BRIG_INIT:-}" ]; then
		export BRIG_INIT
		BRIG_INIT=$(dirname "$BRIG")/brig-init
	fi
}

# sb ARGS...: `brig sandbox ARGS` with the file's state root, bounded like
# every brig command of the tests.
sb() {
	timeout -k 5 "$BRIG_TEST_TIMEOUT" "$BRIG" --root "$SB_ROOT" sandbox "$@"
}

# sb_data ID: where the host reaches a running sandbox's /mnt/data: through
# its init, whose mount of it is the only one.
sb_data() {
	echo "/proc/$("$BRIG" --root "$SB_ROOT" state "$1" | jq -r .pid)/root/mnt/data"
}

# require_sandboxes ID...: in setup, each sandbox that setup_file created
# runs, or the test fails with what its create said
# ($BATS_FILE_TMPDIR/ID.out).
require_sandboxes() {
	local id
	for id in "$@"; do
		"$BRIG" --root "$SB_ROOT" state "$id" >/dev/null 2>&1 ||
			fail "sandbox $id did not start: $(cat "$BATS_FILE_TMPDIR/$id.out")"
	done
}

# ------------------------------------------------------ real traffic ----
# Tests that need the network find their hosts where the host's own tools
# are configured: nothing in the project names a mirror.

# The first http:// source of apt's, as "URI SUITE".
apt_source() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		awk '/^URIs:/ && !u { u = $2 } /^Suites:/ && !s { s = $2 } END { if (u ~ /^http:/) print u, s }' "$f"
	done
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^http:/) { print $i, $(i + 1); exit } }'
}

# url_host URL: its host.
url_host() {
	echo "$1" | sed -E 's|^[a-z]+://([^/:]+).*|\1|'
}

# image_rootfs DIR: a busybox root for an image (podman's, Docker's): the
# applets, root and a user 1000 with a home, a sticky /tmp.
image_rootfs() {
	local rootfs=$1
	mkdir -p "$rootfs"/{bin,etc,proc,sys,dev,tmp,root,home/user}
	chmod 1777 "$rootfs/tmp"
	busybox_applets "$rootfs/bin"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'user:x:1000:1000:user:/home/user:/bin/sh' >"$rootfs/etc/passwd"
	printf '%s\n' 'root:x:0:' 'user:x:1000:' >"$rootfs/etc/group"
	chown 1000:1000 "$rootfs/home/user"
}

# no_mkdir_profile FILE: a seccomp profile that allows all but mkdir and
# mkdirat, which fail with EPERM.
no_mkdir_profile() {
	cat >"$1" <<-'EOF'
		{
			"defaultAction": "SCMP_ACT_ALLOW",
			"syscalls": [
				{ "names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1 }
			]
		}
	EOF
}

# egress_file_env: the file's own packages proxy (brig-egress of the build
# tree, unless BRIG_EGRESS names one): its directory, log and allow-list
# in the file's temporary directory. stop_file_proxies stops it.
egress_file_env() {
	if [ -z "${BRIG_EGRESS:-}" ]; then
		export BRIG_EGRESS
		BRIG_EGRESS=$(dirname "$BRIG")/brig-egress
	fi
	export BRIG_EGRESS_DIR=$BATS_FILE_TMPDIR/egress
	export BRIG_EGRESS_LOG=$BATS_FILE_TMPDIR/egress.log
	export BRIG_EGRESS_CONFIG=$BATS_FILE_TMPDIR/egress.conf
}

# stop_file_proxies: the proxies that logged their start in
# $BRIG_EGRESS_LOG, stopped (SIGTERM: each one's keeper ends with it).
stop_file_proxies() {
	local pid
	for pid in $(sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" 2>/dev/null); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != brig-egress ] || kill "$pid"
	done
	return 0
}

# wait_port PORT: until something listens on the host's 127.0.0.1:PORT
# (~10 s).
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
