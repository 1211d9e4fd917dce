#!/usr/bin/env bats
# shellcheck disable=SC2016 # programs run inside the sandboxes
# The packages-only network (man brig-egress): sandboxes with only `lo`
# and the host's proxy at 127.0.0.1:3128, real traffic to the host's own
# package sources (Debian's archive as apt names it, npm's registry as npm
# names it), refusals, the log, the proxy killed and back, many
# connections at once. On the host: the VM has no network. This file runs
# its own proxy (its dir, allow-list and log), started by brig on demand.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	egress_file_env
	read -r MIRROR SUITE < <(apt_source | head -1)
	NPM_REGISTRY=$(npm config get registry 2>/dev/null)
	export MIRROR SUITE NPM_REGISTRY
	# A test server on the host's loopback: what no sandbox may reach but
	# through allow-private.
	mkdir -p "$BATS_FILE_TMPDIR/www"
	head -c 100000 /dev/urandom >"$BATS_FILE_TMPDIR/www/blob"
	echo hello >"$BATS_FILE_TMPDIR/www/hello.txt"
	TEST_PORT=$((20000 + RANDOM % 20000))
	export TEST_PORT
	# http.server's own main listens with a backlog of 5: too few for the
	# two hundred connections below.
	(cd "$BATS_FILE_TMPDIR/www" && exec python3 -c '
import http.server, sys
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024
Server(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()' "$TEST_PORT") \
		>"$BATS_FILE_TMPDIR/www.log" 2>&1 &
	echo $! >"$BATS_FILE_TMPDIR/www.pid"
	wait_port "$TEST_PORT"
	cat >"$BRIG_EGRESS_CONFIG" <<-EOF
		# the host's package sources, as apt and npm name them
		allow $(url_host "$MIRROR")
		allow $(url_host "$NPM_REGISTRY")
		allow-private 127.0.0.1:$TEST_PORT
		# a name that resolves to loopback, listed without allow-private
		allow localhost:$TEST_PORT
		# an IP listed without allow-private: still refused
		allow 127.0.0.1:9
		max-connections 30
		idle-timeout 3
	EOF
	for id in e1 e2; do
		"$BRIG" --root "$SB_ROOT" sandbox create --network packages --memory 256M --data-size 16M "$id" \
			>"$BATS_FILE_TMPDIR/$id.out" 2>&1 || true
	done
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for d in "$BRIG_SANDBOX_DIR"/*/; do
		[ -d "$d" ] || continue
		"$BRIG" --root "$SB_ROOT" sandbox rm "$(basename "$d")" >/dev/null 2>&1 || true
	done
	kill "$(cat "$BATS_FILE_TMPDIR/www.pid")" 2>/dev/null || true
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -n "$MIRROR" ] || fail "no http:// source in apt's sources"
	require_sandboxes e1 e2
}

teardown() {
	:
}

# fetch ID URL: python3's urllib in the sandbox, through the proxy as the
# environment names it (loopback too): "STATUS BYTES" or "STATUS reason".
fetch() {
	sb exec "$1" -- env NO_PROXY= no_proxy= python3 -c '
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=30)
    print(r.status, len(r.read()))
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    print("error", e)
' "$2"
}

# via_proxy ID REQUEST: REQUEST written raw to the proxy in the sandbox;
# the first line of the answer.
via_proxy() {
	sb exec "$1" -- python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode("latin-1"))
print(s.recv(4096).decode("latin-1").split("\r\n")[0])
' "$2"
}

@test "egress: python3 in a sandbox fetches from Debian's archive, the mirror apt names" {
	run fetch e1 "$MIRROR/dists/$SUITE/Release"
	[ "$status" -eq 0 ]
	set -- $output
	[ "$1" = 200 ]
	[ "$2" -gt 1000 ]
	run sb exec e1 -- python3 -c "import urllib.request; print(urllib.request.urlopen('$MIRROR/dists/$SUITE/Release', timeout=30).read().decode().splitlines()[0])"
	[ "$output" = "Origin: Debian" ]
	# Only lo inside: the address is the proxy's.
	run sb exec e1 -- sh -c 'ls /sys/class/net; echo $HTTP_PROXY $HTTPS_PROXY $NO_PROXY'
	[ "$(squeeze "$output")" = "lo http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1" ]
}

@test "egress: HTTPS through CONNECT to npm's registry, trusted as the host trusts it" {
	[ -n "$NPM_REGISTRY" ] || fail "npm names no registry here"
	run sb exec e1 -- python3 -c "import json, urllib.request; print(json.loads(urllib.request.urlopen('${NPM_REGISTRY%/}/is-number', timeout=30).read())['name'])"
	[ "$status" -eq 0 ]
	[ "$output" = is-number ]
	grep -E "sandbox=e1 host=$(url_host "$NPM_REGISTRY") port=443 verdict=allowed up=[1-9][0-9]* down=[1-9][0-9]* ms=[0-9]+" "$BRIG_EGRESS_LOG"
}

@test "egress: npm install of a small package into /mnt/data, with the host's npm in the tree" {
	command -v npm >/dev/null || fail "this host has no npm to lend the sandbox"
	# The small tree has no Node.js: the host's node and npm laid over it
	# (an overlay, which can't be id-mapped: --userns host).
	local t=$BATS_TEST_TMPDIR/npmtree npm_dir
	npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
	mkdir -p "$t/upper/usr/bin" "$t/upper/usr/lib/node_modules" "$t/tree"
	cp "$(command -v node)" "$t/upper/usr/bin/node"
	cp -a "$npm_dir" "$t/upper/usr/lib/node_modules/npm"
	ln -s ../lib/node_modules/npm/bin/npm-cli.js "$t/upper/usr/bin/npm"
	mount -t overlay overlay -o "ro,lowerdir=$t/upper:$ROOTFS_TREE" "$t/tree"
	run sb create --userns host --network packages --rootfs "$t/tree" --memory 512M --data-size 64M npm1
	[ "$status" -eq 0 ] || { umount "$t/tree"; fail "$output"; }
	run sb exec npm1 -- sh -c 'npm install --no-audit --no-fund --prefix /mnt/data is-number >/dev/null 2>&1; node -e "console.log(require(\"/mnt/data/node_modules/is-number\")(5))"'
	local installed=$output
	run sb rm npm1
	umount "$t/tree"
	[ "$status" -eq 0 ]
	[ "$installed" = true ]
	grep -q "sandbox=npm1 host=$(url_host "$NPM_REGISTRY") port=443 verdict=allowed" "$BRIG_EGRESS_LOG"
}

@test "egress: refused: other hosts, loopback, metadata, IP literals, private names, direct connects" {
	run fetch e1 "http://example.com/"
	[ "$output" = "403 brig: host or port not on the allow-list" ]
	run fetch e1 "https://example.com/"
	[ "$output" = "error <urlopen error Tunnel connection failed: 403 Forbidden>" ]
	run via_proxy e1 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: x\r\n\r\n'
	[ "$output" = "HTTP/1.1 403 Forbidden" ]
	run via_proxy e1 'CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n'
	[ "$output" = "HTTP/1.1 403 Forbidden" ]
	run via_proxy e1 'GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n'
	[ "$output" = "HTTP/1.1 403 Forbidden" ]
	run fetch e1 "http://127.0.0.1:9/"
	[ "$output" = "403 brig: an IP address must be listed with allow-private" ]
	# Another sandbox's proxy is at the same address in its own namespace:
	# from here only an IP literal, refused.
	run via_proxy e1 'CONNECT 127.0.0.1:3128 HTTP/1.1\r\n\r\n'
	[ "$output" = "HTTP/1.1 403 Forbidden" ]
	# A listed name that resolves to loopback: refused after the lookup.
	run fetch e1 "http://localhost:$TEST_PORT/hello.txt"
	[ "$output" = "403 brig: the name resolves to a non-public address" ]
	# The same server listed with allow-private is reached; straight to
	# 127.0.0.1 (as NO_PROXY sends it) is the sandbox's own loopback.
	run fetch e1 "http://127.0.0.1:$TEST_PORT/hello.txt"
	[ "$output" = "200 6" ]
	run sb exec e1 -- python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$TEST_PORT/hello.txt', timeout=30)"
	[[ "$output" == *"Connection refused"* ]]
	# Direct connections out fail at once.
	run sb exec e1 -- python3 -c 'import socket; socket.create_connection(("1.1.1.1", 443), timeout=5)'
	[ "$status" -ne 0 ]
	[[ "$output" == *"Network is unreachable"* ]]
	grep -q "sandbox=e1 host=example.com port=80 verdict=denied-403" "$BRIG_EGRESS_LOG"
	grep -q "sandbox=e1 host=169.254.169.254 port=80 verdict=denied-403" "$BRIG_EGRESS_LOG"
	grep -q "sandbox=e1 host=localhost port=$TEST_PORT verdict=denied-403 .*non-public" "$BRIG_EGRESS_LOG"
}

@test "egress: bad input: a malformed request is 400, a huge head 431; a bad egress.conf stops create by its line" {
	run via_proxy e1 'GARBAGE\r\n\r\n'
	[ "$output" = "HTTP/1.1 400 Bad Request" ]
	run via_proxy e1 'GET /relative HTTP/1.1\r\n\r\n'
	[ "$output" = "HTTP/1.1 400 Bad Request" ]
	run via_proxy e1 'CONNECT host-without-port HTTP/1.1\r\n\r\n'
	[ "$output" = "HTTP/1.1 400 Bad Request" ]
	run sb exec e1 -- python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"GET http://x/ HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 20000)
print(s.recv(4096).decode().split("\r\n")[0])'
	[ "$output" = "HTTP/1.1 431 Request Header Fields Too Large" ]
	printf 'allow mirror.example.org\nallow bad host name!\n' >"$BATS_TEST_TMPDIR/bad.conf"
	BRIG_EGRESS_CONFIG=$BATS_TEST_TMPDIR/bad.conf run --separate-stderr \
		"$BRIG" --root "$SB_ROOT" sandbox create --network packages bad1
	assert_one_line_error "bad.conf: line 2"
	[ ! -e "$BRIG_SANDBOX_DIR/bad1" ]
	refute "$BRIG" --root "$SB_ROOT" state bad1
}

@test "egress: one sandbox can't hold more than its share; idle connections end" {
	# 35 held open from e1: past max-connections (30) the proxy answers 429.
	run sb exec e1 -- python3 -c '
import socket
held, refused = [], 0
for i in range(35):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    held.append(s)
for s in held[30:]:
    refused += s.recv(100).startswith(b"HTTP/1.1 429")
print(refused)'
	[ "$output" = 5 ]
	# e2 is served meanwhile, and e1 again once it let go.
	run fetch e2 "$MIRROR/dists/$SUITE/Release"
	[ "${output%% *}" = 200 ]
	# A tunnel with nothing in it for longer than idle-timeout (3 s) ends.
	run sb exec e1 -- python3 -c "
import socket, time
s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
s.sendall(b'CONNECT 127.0.0.1:$TEST_PORT HTTP/1.1\r\n\r\n')
print(s.recv(100).split(b'\r\n')[0].decode())
t = time.time(); rest = s.recv(100); print(rest == b'', round(time.time() - t) >= 2)"
	[ "$(squeeze "$output")" = "HTTP/1.1 200 Connection established True True" ]
	grep -q "sandbox=e1 .*verdict=error-429" "$BRIG_EGRESS_LOG"
	grep -q 'reason="idle timeout"' "$BRIG_EGRESS_LOG"
}

# proxy_pid: the pid of the proxy that started last (its log says).
proxy_pid() {
	sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" | tail -1
}

@test "egress: the proxy killed under load: its keeper starts it again, and running sandboxes recover by themselves" {
	local pid new id got
	pid=$(proxy_pid)
	[ "$(cat "/proc/$pid/comm")" = brig-egress ] || fail "no proxy at $pid"
	# A loop of fetches in each sandbox, retrying what fails, started
	# before the kills and running on across them: no brig command
	# between them and the end.
	for id in e1 e2; do
		sb exec "$id" -- env NO_PROXY= no_proxy= python3 -c '
import sys, time, urllib.request
ok = failed = 0
end = time.time() + 90
while ok < 60 and time.time() < end:
    try:
        ok += len(urllib.request.urlopen(sys.argv[1], timeout=10).read()) == 100000
    except Exception:
        failed += 1
        time.sleep(0.2)
    time.sleep(0.05)
print(ok, failed)' "http://127.0.0.1:$TEST_PORT/blob" >"$BATS_TEST_TMPDIR/$id.got" 2>&1 &
	done
	sleep 1.5
	kill -9 "$pid"
	for _ in $(seq 50); do
		new=$(proxy_pid)
		[ "$new" != "$pid" ] && break
		sleep 0.1
	done
	[ "$new" != "$pid" ] || fail "the proxy did not come back: $(tail -n 5 "$BRIG_EGRESS_LOG")"
	sleep 1
	kill -9 "$new"
	wait
	for id in e1 e2; do
		got=$(cat "$BATS_TEST_TMPDIR/$id.got")
		[ "${got%% *}" = 60 ] || fail "$id: $got (fetches, failures)"
	done
	[ "$(grep -c 'keeper: the proxy (pid [0-9]*) was killed by signal 9' "$BRIG_EGRESS_LOG")" -ge 2 ] ||
		fail "the keeper's log: $(grep keeper "$BRIG_EGRESS_LOG")"
	# The third proxy keeps the allow-list.
	run fetch e1 "$MIRROR/dists/$SUITE/Release"
	[ "${output%% *}" = 200 ] || fail "after the kills: $output"
	run fetch e2 "http://example.com/"
	[ "$output" = "403 brig: host or port not on the allow-list" ] || fail "after the kills, a host not allowed: $output"
}

@test "egress: the proxy and its keeper killed: requests fail closed, then it comes back for every running sandbox" {
	local keeper
	pid=$(proxy_pid)
	[ -n "$pid" ]
	keeper=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status")
	[ "$(cat "/proc/$keeper/comm")" = brig-egress ] || fail "no keeper for $pid"
	# A process already in e2 tries the proxy once told to, after the kill
	# (an exec would start the proxy again first).
	local data
	data=$(sb_data e2)
	rm -f "$data/go" "$data/tried"
	sb exec e2 -- python3 -c '
import os, socket, time
while not os.path.exists("/mnt/data/go"):
    time.sleep(0.05)
try:
    socket.create_connection(("127.0.0.1", 3128), timeout=5)
    out = "connected"
except OSError as e:
    out = e.strerror
open("/mnt/data/tried", "w").write(out)' &
	sleep 1
	kill -9 "$keeper" "$pid"
	touch "$data/go"
	wait
	# Nothing listened in the sandbox: refused, never let through.
	[ "$(cat "$data/tried")" = "Connection refused" ]
	# The next exec starts it again; both sandboxes are served without a
	# restart of either.
	run fetch e1 "$MIRROR/dists/$SUITE/Release"
	[ "${output%% *}" = 200 ]
	new=$(proxy_pid)
	[ "$new" != "$pid" ]
	run fetch e2 "$MIRROR/dists/$SUITE/Release"
	[ "${output%% *}" = 200 ]
}

@test "egress: two hundred connections from ten sandboxes at once complete" {
	for i in $(seq 0 9); do
		sb create --network packages --memory 128M --data-size 8M --pids 64 "c$i" >"$BATS_TEST_TMPDIR/c$i.out" 2>&1 &
	done
	wait
	for i in $(seq 0 9); do
		sb exec "c$i" -- env NO_PROXY= no_proxy= python3 -c "
import concurrent.futures, urllib.request
def get(_):
    return len(urllib.request.urlopen('http://127.0.0.1:$TEST_PORT/blob', timeout=60).read())
with concurrent.futures.ThreadPoolExecutor(20) as ex:
    sizes = list(ex.map(get, range(20)))
print(sum(1 for s in sizes if s == 100000))" >"$BATS_TEST_TMPDIR/c$i.got" 2>&1 &
	done
	wait
	total=0
	for i in $(seq 0 9); do
		got=$(cat "$BATS_TEST_TMPDIR/c$i.got")
		[ "$got" = 20 ] || fail "c$i: $got of 20: $(cat "$BATS_TEST_TMPDIR/c$i.out")"
		total=$((total + got))
	done
	[ "$total" = 200 ]
	for i in $(seq 0 9); do sb rm "c$i"; done
	# Their registrations went with them: e1's and e2's are left.
	[ "$(ls "$BRIG_EGRESS_DIR/sandboxes" | wc -l)" = 2 ]
}

@test "egress: without egress.conf the allow-list is the host's package sources" {
	export BRIG_EGRESS_DIR=$BATS_TEST_TMPDIR/egress2 BRIG_EGRESS_LOG=$BATS_TEST_TMPDIR/egress2.log
	export BRIG_EGRESS_CONFIG=$BATS_TEST_TMPDIR/none.conf
	sb create --network packages --memory 128M --data-size 8M --pids 64 h1
	run fetch h1 "$MIRROR/dists/$SUITE/Release"
	[ "${output%% *}" = 200 ]
	run fetch h1 "http://example.com/"
	[ "${output%% *}" = 403 ]
	# apt's http:// source is plain HTTP only: no tunnel to its port 80.
	run via_proxy h1 "CONNECT $(url_host "$MIRROR"):80 HTTP/1.1\r\n\r\n"
	[ "$output" = "HTTP/1.1 403 Forbidden" ]
	grep -q "from the host's package sources" "$BRIG_EGRESS_LOG"
	grep -q "allow $(url_host "$MIRROR"):80" "$BRIG_EGRESS_LOG"
	sb rm h1
	stop_file_proxies
}
