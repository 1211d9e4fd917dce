#!/usr/bin/env bats
# `brig exec`: a new process in a running container, the ways people,
# podman and containerd do it.

load helpers

RECVTTY=${RECVTTY:-$(dirname "$BRIG")/tests/tools/recvtty}

setup() {
	setup_bundle
	set_args sleep 1000
	brig_detached run -d "$CID"
}

@test "exec runs a command in the container and exits with its status" {
	run brig exec "$CID" sh -c 'echo from-exec; exit 5'
	[ "$status" -eq 5 ]
	[ "$output" = from-exec ]
}

@test "exec joins every namespace and the cgroup of the container" {
	init=$(container_pid "$CID")
	run brig exec "$CID" sh -c 'hostname; grep "^0::" /proc/self/cgroup; readlink /proc/1/exe; cat /proc/1/cmdline | tr "\0" " "'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = brig ]
	[ "${lines[1]}" = "0::/" ]
	[[ "${lines[3]}" == "sleep 1000"* ]] || fail "pid 1 inside is not the container's init: $output"
	for ns in ipc uts net pid mnt cgroup; do
		[ "$(readlink /proc/$init/ns/$ns)" != "$(readlink /proc/self/ns/$ns)" ] || fail "$ns is the host's"
	done
	# And the exec'd process is in the container's cgroup, as seen from the host.
	run brig exec "$CID" sh -c 'echo $$; sleep 2'
	cg=$(container_cgroup "$CID")
	[ -n "$cg" ] && [ "$(wc -l <"$cg/cgroup.procs")" -ge 1 ]
}

@test "exec takes the container's environment, user and cwd by default" {
	update_config '.process.env += ["FROM_CONFIG=yes"]'
	brig delete -f "$CID"
	brig_detached run -d "$CID"
	run brig exec "$CID" sh -c 'echo $FROM_CONFIG; id -u; pwd'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = yes ]
	[ "${lines[1]}" = 0 ]
	[ "${lines[2]}" = / ]
}

@test "exec --env, --cwd, --user and --additional-gids" {
	run brig exec --env A=1 -e B=two --cwd /tmp --user 1000:1000 --additional-gids 2000 "$CID" \
		sh -c 'echo $A $B; pwd; id -u; id -g; id -G'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "1 two" ]
	[ "${lines[1]}" = /tmp ]
	[ "${lines[2]}" = 1000 ]
	[ "${lines[3]}" = 1000 ]
	[[ " ${lines[4]} " == *" 2000 "* ]] || fail "groups: ${lines[4]}"
}

@test "exec --env replaces a variable of the same name" {
	run brig exec --env PATH=/bin "$CID" sh -c 'echo $PATH'
	[ "$output" = /bin ]
}

@test "exec --cap adds a capability and --no-new-privs sets no_new_privs" {
	run brig exec "$CID" sh -c 'grep CapEff /proc/self/status'
	before=$(awk '{print $2}' <<<"$output")
	run brig exec --cap CAP_SYS_ADMIN --no-new-privs "$CID" sh -c 'grep -E "CapEff|NoNewPrivs" /proc/self/status'
	[ "$status" -eq 0 ]
	after=$(awk '/CapEff/ {print $2}' <<<"$output")
	# CAP_SYS_ADMIN is bit 21.
	[ $(( 0x$after & (1 << 21) )) -ne 0 ] || fail "CAP_SYS_ADMIN missing: $after"
	[ $(( 0x$before & (1 << 21) )) -eq 0 ]
	grep -q "NoNewPrivs:.1" <<<"$output"
}

@test "exec --process runs an OCI process JSON" {
	cat >"$BATS_TEST_TMPDIR/process.json" <<-'EOF_JSON'
		{"args": ["sh", "-c", "echo $WHO; id -u; pwd"], "env": ["WHO=process-json", "PATH=/bin"],
		 "cwd": "/etc", "user": {"uid": 1000, "gid": 1000}}
	EOF_JSON
	run brig exec --process "$BATS_TEST_TMPDIR/process.json" "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = process-json ]
	[ "${lines[1]}" = 1000 ]
	[ "${lines[2]}" = /etc ]
}

@test "exec --process with bad JSON fails with one line naming the file" {
	echo '{"args": "sh"}' >"$BATS_TEST_TMPDIR/bad.json"
	run --separate-stderr brig exec --process "$BATS_TEST_TMPDIR/bad.json" "$CID"
	assert_one_line_error bad.json args
}

@test "exec --detach --pid-file returns at once and names the process" {
	brig exec --detach --pid-file "$BATS_TEST_TMPDIR/exec.pid" "$CID" sleep 77 </dev/null >/dev/null 2>&1
	pid=$(cat "$BATS_TEST_TMPDIR/exec.pid")
	[ -n "$pid" ]
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "^sleep 77"
	grep -qx "$pid" "$(container_cgroup "$CID")/cgroup.procs"
}

@test "exec --preserve-fds passes extra fds" {
	echo "via-fd" >"$BATS_TEST_TMPDIR/fd3"
	run bash -c 'exec 3<"$1"; shift; "$@"' _ "$BATS_TEST_TMPDIR/fd3" \
		"$BRIG" --root "$ROOT" exec --preserve-fds 1 "$CID" sh -c 'cat <&3'
	[ "$status" -eq 0 ]
	[ "$output" = via-fd ]
}

@test "no runtime fd reaches an exec'd process" {
	run bash -c 'exec 7</dev/null 9>/dev/null; "$@"' _ "$BRIG" --root "$ROOT" exec "$CID" ls /proc/self/fd
	[ "$status" -eq 0 ]
	# 0-2 and the fd ls itself opened to read the directory.
	[ "$(wc -w <<<"$output")" -le 4 ] || fail "fds: $output"
	[[ " $(tr '\n' ' ' <<<"$output") " != *" 7 "* ]] && [[ " $(tr '\n' ' ' <<<"$output") " != *" 9 "* ]] || fail "leaked: $output"
}

@test "a foreground exec leaves the container free while its process runs" {
	# exec holds the container's lock only until the process has started:
	# a second exec, kill or delete need not wait for the first to end.
	brig exec "$CID" sleep 30017 </dev/null >/dev/null 2>&1 &
	first=$!
	for _ in $(seq 50); do
		pgrep -f 'sleep 30017' >/dev/null && break
		sleep 0.1
	done
	pgrep -f 'sleep 30017' >/dev/null || fail "the first exec's process never ran"
	run timeout 5 "$BRIG" --root "$ROOT" exec "$CID" sh -c 'echo second'
	pkill -f 'sleep 30017' || true
	wait "$first" || true
	[ "$status" -eq 0 ] || fail "second exec: $status $output"
	[ "$output" = second ]
}

@test "exec --timeout kills the process and its children and exits 124" {
	start=$(date +%s)
	run brig exec --timeout 1s "$CID" sh -c 'sleep 100 & sleep 100'
	[ "$status" -eq 124 ]
	[ $(( $(date +%s) - start )) -lt 10 ]
	sleep 0.5
	n=$(brig ps -f json "$CID" | jq length)
	[ "$n" -eq 1 ] || fail "$n processes left in the container (only the init should be)"
}

@test "exec --timeout does not touch a process that finishes in time" {
	run brig exec --timeout 5s "$CID" sh -c 'exit 3'
	[ "$status" -eq 3 ]
}

@test "exec into a paused container fails unless --ignore-paused" {
	brig pause "$CID"
	run --separate-stderr brig exec "$CID" true
	assert_one_line_error paused
	brig exec --ignore-paused --detach "$CID" true </dev/null >/dev/null 2>&1
	brig resume "$CID"
}

@test "exec --cgroup runs the process in a sub-cgroup" {
	brig exec --detach --cgroup sub1 --pid-file "$BATS_TEST_TMPDIR/p" "$CID" sleep 55 </dev/null >/dev/null 2>&1
	cg=$(container_cgroup "$CID")
	grep -qx "$(cat "$BATS_TEST_TMPDIR/p")" "$cg/sub1/cgroup.procs"
}

@test "exec --tty through a console socket gives a pty" {
	SOCK=$BATS_TEST_TMPDIR/console.sock
	"$RECVTTY" "$SOCK" >"$BATS_TEST_TMPDIR/tty.out" 2>/dev/null &
	recv=$!
	for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
	brig exec --tty --console-socket "$SOCK" --detach "$CID" tty </dev/null >/dev/null
	wait "$recv"
	grep -q "^/dev/pts/[0-9]" "$BATS_TEST_TMPDIR/tty.out"
}

@test "exec --tty in the foreground relays the terminal" {
	run bash -c 'echo typed | "$@"' _ "$BRIG" --root "$ROOT" exec -t "$CID" sh -c 'tty; read x; echo "got $x"'
	[ "$status" -eq 0 ]
	[[ "$output" == *"/dev/pts/"* ]]
	[[ "$output" == *"got typed"* ]]
}

@test "exec of a command not in the container fails with one line" {
	run --separate-stderr brig exec "$CID" no-such-command
	assert_one_line_error no-such-command
}

@test "exec after the container's init exited fails cleanly" {
	brig kill "$CID" KILL
	wait_for_status "$CID" stopped
	run --separate-stderr brig exec "$CID" true
	assert_one_line_error stopped
}

@test "exec into a container that does not exist fails" {
	run --separate-stderr brig exec nosuch true
	assert_one_line_error nosuch
}

@test "exec without a command fails" {
	run --separate-stderr brig exec "$CID"
	assert_one_line_error command
}
