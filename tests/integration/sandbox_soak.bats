#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# Soak: many sandbox lifecycles and many API requests, counting what the
# host holds before and after (mounts, loop devices, cgroups, id ranges,
# files, the proxy's and lxcfs' fds and sockets, the API server's fds).
# Nothing may be left or grow. The sanitizer run (scripts/
# test-sanitizers.sh) runs this file with every brig program built with
# ASan and LSan: a leak in any of them fails that run. Host only.
# BRIG_TEST_SOAK_CYCLES (1000) and BRIG_TEST_SOAK_REQUESTS (10000) size it.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
CYCLES=${BRIG_TEST_SOAK_CYCLES:-1000}
REQUESTS=${BRIG_TEST_SOAK_REQUESTS:-10000}

setup_file() {
	sandbox_file_env
	export BRIG_IDRANGE_DIR=$BATS_FILE_TMPDIR/idranges
	export BRIG_LXCFS_DIR=$BATS_FILE_TMPDIR/lxcfs
	export BRIG_EGRESS_DIR=$BATS_FILE_TMPDIR/egress
	export BRIG_EGRESS_LOG=$BATS_FILE_TMPDIR/egress.log
	export API_DIR=$BATS_FILE_TMPDIR/api API_TOKEN
	export API_SOCK=$API_DIR/api.sock
	mkdir -p "$API_DIR"
	API_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && echo "$API_TOKEN" >"$API_DIR/token")
	local prog var
	for prog in brig-api brig-egress; do
		var=$(echo "$prog" | tr a-z- A-Z_)
		if [ -z "${!var:-}" ] && [ -x "$(dirname "$BRIG")/$prog" ]; then
			export "$var=$(dirname "$BRIG")/$prog"
		fi
	done
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	local pid
	pid=$(cat "$API_DIR/serve.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
	sb ls 2>/dev/null | awk 'NR > 1 { print $1 }' | while read -r id; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	egress_pids | xargs -r kill 2>/dev/null
	pid=$(cat "$BRIG_LXCFS_DIR.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
	umount -l "$BRIG_LXCFS_DIR" 2>/dev/null || true
	return 0
}

setup() {
	ROOT=$SB_ROOT
	MARK=none
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
}

# The proxy processes this file's sandboxes started (their log says).
egress_pids() {
	local pid
	sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" 2>/dev/null | sort -u | while read -r pid; do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != brig-egress ] || echo "$pid"
	done
}

# fds PID...: each process's open fds, and of them sockets, as "fds/sockets".
fds() {
	local pid all socks
	for pid in "$@"; do
		all=$(find "/proc/$pid/fd" -mindepth 1 2>/dev/null | wc -l)
		socks=$(find "/proc/$pid/fd" -mindepth 1 -lname 'socket:*' 2>/dev/null | wc -l)
		echo "$all/$socks"
	done | paste -sd, -
}

# counts: one line of what the host holds for this file's sandboxes; the
# shared daemons' fds go to grown(), the rest must be equal.
counts() {
	local lxcfs
	lxcfs=$(cat "$BRIG_LXCFS_DIR.pid" 2>/dev/null) || lxcfs=none
	echo "mounts=$(wc -l </proc/self/mountinfo)" \
		"loops=$(losetup -a | wc -l)" \
		"cgroups=$(find /sys/fs/cgroup -maxdepth 6 -type d -name 'soak-*' 2>/dev/null | wc -l)" \
		"ranges=$(find "$BRIG_IDRANGE_DIR" -type f 2>/dev/null | wc -l)" \
		"home=$(find "$BRIG_SANDBOX_DIR" -mindepth 1 -maxdepth 1 ! -name .images 2>/dev/null | wc -l)" \
		"state=$(find "$SB_ROOT" -mindepth 1 -maxdepth 1 ! -name '.seccomp-*' 2>/dev/null | wc -l)" \
		"egress=$(fds $(egress_pids))" "egress_dir=$(find "$BRIG_EGRESS_DIR" 2>/dev/null | wc -l)" \
		"lxcfs=$(fds "$lxcfs")" \
		"procs=$(for p in /proc/[0-9]*; do readlink "$p/root" 2>/dev/null; done | grep -cF "$BRIG_SANDBOX_DIR/")"
}

strip_daemons() { # COUNTS: without the daemons' fds
	sed -E 's/ (egress|lxcfs)=[0-9/,]*//g' <<<"$1"
}

grown() { # BEFORE AFTER NAME: fails if NAME's fds or sockets grew
	local b a
	b=$(grep -o " $3=[0-9/,]*" <<<"$1" | cut -d= -f2)
	a=$(grep -o " $3=[0-9/,]*" <<<"$2" | cut -d= -f2)
	[ "${a%%/*}" -le "${b%%/*}" ] && [ "${a##*/}" -le "${b##*/}" ] ||
		fail "$3's fds/sockets grew: $b -> $a"
}

cycle() { # N: a sandbox made, used and removed
	local id=soak-$1
	timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" --memory 64M \
		--pids 64 --data-size 8M --network packages "$id" >/dev/null &&
		timeout 60 "$BRIG" --root "$SB_ROOT" sandbox exec "$id" -- sh -c 'echo x >/mnt/data/f && cat /mnt/data/f' |
		grep -qx x &&
		timeout 60 "$BRIG" --root "$SB_ROOT" sandbox rm "$id"
}

@test "sandbox: $CYCLES create/exec/rm cycles, with the proxy and the limits view, leave nothing behind" {
	# The first cycle starts what every sandbox shares (the proxy, lxcfs,
	# the formatted image, the compiled seccomp program): it stays.
	cycle warm || fail "a first cycle failed"
	before=$(counts)
	export -f cycle
	export BRIG SB_ROOT ROOTFS_TREE
	seq "$CYCLES" | xargs -P 4 -I{} bash -c 'cycle {} || echo "cycle {} failed"' >"$BATS_TEST_TMPDIR/failed"
	[ ! -s "$BATS_TEST_TMPDIR/failed" ] || fail "$(head -5 "$BATS_TEST_TMPDIR/failed")"
	after=$(counts)
	echo "# before: $before" >&3
	echo "# after:  $after" >&3
	# Every count the same, but the shared daemons' fds, which may also
	# have dropped what they still held of the first cycle's sandbox.
	[ "$(strip_daemons "$after")" = "$(strip_daemons "$before")" ] ||
		fail "after $CYCLES cycles: $after; before: $before"
	grown "$before" "$after" egress
	grown "$before" "$after" lxcfs
}

# api_requests N: N requests to the server over one connection at a time
# (keep-alive), a mix of every kind the API answers and refuses; prints
# "status count" lines.
api_requests() {
	python3 - "$API_SOCK" "$API_TOKEN" "$1" <<-'EOF'
		import collections, http.client, socket, sys
		path, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
		class Conn(http.client.HTTPConnection):
		    def connect(self):
		        self.sock = socket.socket(socket.AF_UNIX)
		        self.sock.connect(path)
		good = {"Authorization": "Bearer " + token}
		kinds = [
		    ("GET", "/v1/sandboxes", None, good),
		    ("GET", "/v1/sandboxes/soak-api", None, good),
		    ("GET", "/v1/sandboxes/nope", None, good),
		    ("GET", "/v1/sandboxes", None, {"Authorization": "Bearer wrong"}),
		    ("GET", "/v2/what", None, good),
		    ("POST", "/v1/sandboxes", b"{not json", good),
		    ("POST", "/v1/sandboxes", b'{"id": "../x"}', good),
		    ("DELETE", "/v1/sandboxes/nope", None, good),
		    ("GET", "/v1/sandboxes/soak-api/files/../../etc/passwd", None, good),
		    ("POST", "/v1/sandboxes/soak-api/exec", b'{"cmd": ["true"]}', good),
		]
		seen = collections.Counter()
		conn = Conn("localhost", timeout=60)
		for i in range(n):
		    method, url, body, headers = kinds[i % len(kinds)]
		    try:
		        conn.request(method, url, body=body, headers=headers)
		        r = conn.getresponse()
		        r.read()
		        seen[r.status] += 1
		        if r.getheader("Connection", "").lower() == "close":
		            conn.close()
		            conn = Conn("localhost", timeout=60)
		    except (http.client.HTTPException, OSError) as e:
		        seen[type(e).__name__] += 1
		        conn.close()
		        conn = Conn("localhost", timeout=60)
		for k, v in sorted(seen.items(), key=str):
		    print(k, v)
	EOF
}

@test "brig serve: $REQUESTS requests of every kind, good and bad, leave its fds as they were, and it stops clean" {
	"$BRIG" --root "$SB_ROOT" serve --listen "unix:$API_SOCK" --token-file "$API_DIR/token" \
		</dev/null >>"$API_DIR/serve.log" 2>&1 3>&- &
	echo $! >"$API_DIR/serve.pid"
	for _ in $(seq 100); do
		[ -S "$API_SOCK" ] && break
		sleep 0.1
	done
	sb create --rootfs "$ROOTFS_TREE" --memory 64M --data-size 8M --network none soak-api
	server=$(cat "$API_DIR/serve.pid")
	# The server's own process, or the brig-api it runs as.
	api=$(pgrep -P "$server" brig-api || echo "$server")
	run api_requests 500
	[[ "$output" == *"200 "* ]] || fail "warm-up: $output"
	before=$(fds "$api")
	run api_requests "$REQUESTS"
	echo "# $REQUESTS requests: $(echo "$output" | paste -sd, -)" >&3
	# Every kind answered as it should: none dropped or refused otherwise.
	[[ "$output" != *Error* ]] || fail "$output"
	for want in "200 $((REQUESTS / 10 * 3))" "401 $((REQUESTS / 10))" "404 "; do
		[[ "$output" == *"$want"* ]] || fail "no \`$want\` in: $output"
	done
	after=$(fds "$api")
	echo "# server fds/sockets: before $before, after $after" >&3
	[ "$after" = "$before" ] || fail "server fds/sockets: $before before, $after after"
	# It stops at SIGTERM, its own exit (under LSan: its leak check).
	kill "$server"
	for _ in $(seq 100); do
		kill -0 "$server" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$server" 2>/dev/null || fail "brig serve did not stop at SIGTERM"
	wait "$server" || fail "brig serve exited $?: $(tail -5 "$API_DIR/serve.log")"
	rm -f "$API_DIR/serve.pid"
	sb rm soak-api
}
