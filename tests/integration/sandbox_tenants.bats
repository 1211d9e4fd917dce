#!/usr/bin/env bats
# shellcheck disable=SC2016 # programs run inside the sandboxes
# Hostile tenants: one sandbox (h1) that fills every limit it has, and
# tries every way it has to reach another (v1). The others' execs go on at
# nearly their own speed, and nothing of one sandbox is seen, signalled or
# reached from another: proc, signals, sockets (loopback, abstract, SysV
# IPC), the proxy, the API, files (data, /tmp, /dev/shm, the shared tree).
# On the host: the proxy needs the host's network namespace.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
# The most an exec into a neighbour may slow down while h1 fills its
# limits: the median of the execs, against the median before.
SLOWDOWN_MAX=${BRIG_TEST_SLOWDOWN_MAX:-3}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	egress_file_env
	export BRIG_LXCFS_DIR=$BATS_FILE_TMPDIR/lxcfs
	# A web server on the host's loopback, the only destination allowed.
	mkdir -p "$BATS_FILE_TMPDIR/www"
	echo hello >"$BATS_FILE_TMPDIR/www/hello.txt"
	TEST_PORT=$((20000 + RANDOM % 20000))
	export TEST_PORT
	(cd "$BATS_FILE_TMPDIR/www" && exec python3 -m http.server --bind 127.0.0.1 "$TEST_PORT") \
		</dev/null >"$BATS_FILE_TMPDIR/www.log" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/www.pid"
	wait_port "$TEST_PORT"
	cat >"$BRIG_EGRESS_CONFIG" <<-EOF
		allow-private 127.0.0.1:$TEST_PORT
		max-connections 8
	EOF
	"$BRIG" --root "$SB_ROOT" sandbox create --memory 256M --pids 128 --data-size 32M v1 \
		>"$BATS_FILE_TMPDIR/v1.out" 2>&1 || true
	"$BRIG" --root "$SB_ROOT" sandbox create --memory 128M --pids 64 --cpus 1 --data-size 16M h1 \
		>"$BATS_FILE_TMPDIR/h1.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	local id pid
	for id in h1 v1; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	kill "$(cat "$BATS_FILE_TMPDIR/www.pid")" 2>/dev/null || true
	stop_file_proxies
	pid=$(cat "$BRIG_LXCFS_DIR.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
	umount -l "$BRIG_LXCFS_DIR" 2>/dev/null || true
	return 0
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	require_sandboxes v1 h1
}

# exec_ms ID N: the median wall time in ms of N execs of `true` into ID.
exec_ms() {
	local i t0
	for ((i = 0; i < $2; i++)); do
		t0=$(date +%s%N)
		sb exec "$1" -- true
		echo $((($(date +%s%N) - t0) / 1000000))
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# fetch ID: the test server's file through the proxy, as the sandbox's
# environment names it: "STATUS BYTES" or "error REASON".
fetch() {
	sb exec "$1" -- env NO_PROXY= no_proxy= python3 -c '
import sys, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=20)
    print(r.status, len(r.read()))
except Exception as e:
    print("error", e)' "http://127.0.0.1:$TEST_PORT/hello.txt"
}

@test "tenants: one that fills its memory, pids, data and proxy quota slows another's exec by at most ${SLOWDOWN_MAX}x" {
	local before during init
	before=$(exec_ms v1 15)
	# Each attack in a process of its own, run on until h1 is removed:
	# memory allocated until the OOM killer comes, again and again; the
	# data disk written full, again and again; every connection the
	# proxy grants h1 held open; then a fork bomb into its pids limit.
	sb exec h1 -- sh -c 'while :; do python3 -c "
a = []
while True:
    a.append(bytearray(1 << 20))"; done' >/dev/null 2>&1 3>&- &
	sb exec h1 -- sh -c 'while :; do dd if=/dev/zero of=/mnt/data/fill bs=1M 2>/dev/null; rm -f /mnt/data/fill; done' \
		>/dev/null 2>&1 3>&- &
	sb exec h1 -- env NO_PROXY= no_proxy= python3 -c '
import socket, time
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(12)]
time.sleep(600)' >/dev/null 2>&1 3>&- &
	sleep 2
	sb exec h1 -- python3 -c '
import os
while True:
    try:
        os.fork()
    except OSError:
        pass' >/dev/null 2>&1 3>&- &
	sleep 3
	# Each limit is full.
	init=$("$BRIG" --root "$SB_ROOT" state h1 | jq -r .pid)
	[ "$(pid_cgroup_file "$init" pids pids.current)" -ge 60 ] ||
		fail "h1's pids: $(pid_cgroup_file "$init" pids pids.current)"
	[ "$(awk '$1 == "oom_kill" { print $2 }' "$(pid_cgroup_dir "$init" memory)"/memory.{oom_control,events} 2>/dev/null | head -n 1)" -ge 1 ] ||
		fail "h1 was never OOM-killed"
	grep -q "sandbox=h1 .*verdict=error-429" "$BRIG_EGRESS_LOG" ||
		fail "h1 never reached its proxy quota: $(tail -n 5 "$BRIG_EGRESS_LOG")"

	during=$(exec_ms v1 15)
	run fetch v1
	[ "$output" = "200 6" ] || fail "v1's fetch while h1 holds its quota: $output"
	run sb exec v1 -- sh -c 'head -c 4M /dev/zero >/mnt/data/mine && wc -c </mnt/data/mine'
	[ "$output" = 4194304 ] || fail "v1's data while h1's is full: $output"
	echo "# exec into v1: ${before} ms before, ${during} ms while h1 fills its limits" \
		"($(awk -v a="$during" -v b="$before" 'BEGIN { printf "%.2f", a / b }')x)" >&3
	[ "$during" -le $((before * SLOWDOWN_MAX)) ] ||
		fail "exec into v1 took ${during} ms with h1 attacking, ${before} ms before"

	# h1 is still manageable: removed with its bombs, and made again.
	sb rm h1
	sb create --memory 128M --pids 64 --cpus 1 --data-size 16M h1
}

@test "tenants: nothing of one sandbox is seen, signalled or reached from another" {
	local pid
	# v1's secrets: a process, a loopback server, an abstract socket, a
	# SysV message queue, files in its data, /tmp and /dev/shm.
	sb exec v1 -- sh -c 'echo v1-secret >/mnt/data/secret; echo v1-secret >/tmp/secret; echo v1-secret >/dev/shm/secret'
	sb exec v1 -- python3 -c '
import os, socket, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
tcp = socket.socket(); tcp.bind(("127.0.0.1", 7777)); tcp.listen()
ab = socket.socket(socket.AF_UNIX); ab.bind("\0v1-secret"); ab.listen()
os.execvp("sleep", ["sleep", "4242"])' </dev/null >/dev/null 2>&1 3>&-
	sb exec v1 -- ipcmk -Q >/dev/null
	for _ in $(seq 50); do
		pid=$(pgrep -f '^sleep 4242$' | head -n 1)
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "v1's sleep did not start"

	run sb exec h1 -- sh -c '
		# proc: no process of v1, by name or by its host pid
		for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 424[2] $"
		[ -e /proc/'"$pid"' ] && echo "pid visible" || echo "pid unseen"
		# signals: no such process
		kill -0 '"$pid"' 2>/dev/null && echo "signalled" || echo "not signalled"
		# IPC: its own queues only
		ipcs -q | grep -c "^0x" || true
		# files: nowhere in h1
		cat /mnt/data/secret /tmp/secret /dev/shm/secret 2>/dev/null | wc -l
		grep -rls v1-secret /mnt /tmp /dev/shm /run 2>/dev/null | wc -l
		# the shared tree: read-only, nothing to plant for the next one
		touch /usr/bin/planted 2>/dev/null && echo planted || echo "tree read-only"
		# the host: no API socket, no proxy control socket, no runtime state
		ls /run/brig /run/brig-egress 2>/dev/null | wc -l
	'
	[ "$(squeeze "$output")" = "0 pid unseen not signalled 0 0 0 tree read-only 0" ] ||
		fail "from h1: $output"

	# sockets: v1's loopback server and abstract socket are not in h1's
	# network namespace; the proxy won't connect to either.
	run sb exec h1 -- python3 -c '
import socket
out = []
for addr, fam in ((("127.0.0.1", 7777), socket.AF_INET), ("\0v1-secret", socket.AF_UNIX)):
    s = socket.socket(fam)
    try:
        s.connect(addr); out.append("connected")
    except OSError as e:
        out.append(e.strerror)
print(out)'
	[ "$output" = "['Connection refused', 'Connection refused']" ] || fail "h1's sockets: $output"
	run sb exec h1 -- python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT 127.0.0.1:7777 HTTP/1.1\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())'
	[ "$output" = "HTTP/1.1 403 Forbidden" ] || fail "the proxy to v1's port: $output"

	# v1 was untouched by all of it.
	kill -0 "$pid" || fail "v1's sleep is gone"
	run sb exec v1 -- sh -c 'cat /mnt/data/secret /tmp/secret /dev/shm/secret; ipcs -q | grep -c "^0x"'
	[ "$(squeeze "$output")" = "v1-secret v1-secret v1-secret 1" ] || fail "v1 after h1's tries: $output"
}
