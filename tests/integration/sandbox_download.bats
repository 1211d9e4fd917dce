#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandboxes
# `brig sandbox download ID URL PATH` (man brig-sandbox): fetched on the
# host's side by brig-fetch, into /mnt/data owned by the sandbox user,
# whole or not at all. Real traffic to the host's own apt mirror (as apt
# names it), a test server on the host's loopback for the rest (allowed
# through allow-private), egress.conf's of this file's own
# (BRIG_EGRESS_CONFIG). Two sandboxes without a network: d1, and d2 with
# a 4M /mnt/data for the quota. On the host: the VM has no network.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

# A test server: files from www/, /redirect?to=URL (302 there),
# /hops/N (N redirects before hello.txt), /slow (a byte, then nothing).
write_server() {
	cat >"$1" <<-'EOF'
		import http.server, sys, time, urllib.parse
		class Handler(http.server.SimpleHTTPRequestHandler):
		    def redirect(self, to):
		        self.send_response(302)
		        self.send_header("Location", to)
		        self.send_header("Content-Length", "0")
		        self.end_headers()
		    def do_GET(self):
		        url = urllib.parse.urlparse(self.path)
		        if url.path == "/redirect":
		            return self.redirect(urllib.parse.parse_qs(url.query)["to"][0])
		        if url.path == "/slow":
		            self.send_response(200)
		            self.send_header("Content-Length", "10")
		            self.end_headers()
		            self.wfile.write(b"x")
		            self.wfile.flush()
		            time.sleep(30)
		            return
		        if url.path.startswith("/hops/"):
		            n = int(url.path[6:])
		            return self.redirect("/hops/%d" % (n - 1) if n > 1 else "/hello.txt")
		        return super().do_GET()
		http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
	EOF
}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	export BRIG_FETCH=${BRIG_FETCH:-$(dirname "$BRIG")/brig-fetch}
	read -r MIRROR SUITE < <(apt_source | head -1)
	MIRROR_HOST=$(url_host "$MIRROR")
	export MIRROR SUITE MIRROR_HOST
	mkdir -p "$BATS_FILE_TMPDIR/www"
	echo hello >"$BATS_FILE_TMPDIR/www/hello.txt"
	head -c 100000 /dev/urandom >"$BATS_FILE_TMPDIR/www/blob"
	head -c 8000000 /dev/urandom >"$BATS_FILE_TMPDIR/www/big"
	write_server "$BATS_FILE_TMPDIR/server.py"
	TEST_PORT=$((20000 + RANDOM % 20000))
	export TEST_PORT WWW=http://127.0.0.1:$TEST_PORT
	(cd "$BATS_FILE_TMPDIR/www" && exec python3 ../server.py "$TEST_PORT") \
		>"$BATS_FILE_TMPDIR/www.log" 2>&1 &
	echo $! >"$BATS_FILE_TMPDIR/www.pid"
	wait_port "$TEST_PORT"
	# The test server; its name, and an IP, listed without allow-private.
	export BRIG_EGRESS_CONFIG=$BATS_FILE_TMPDIR/egress.conf
	cat >"$BRIG_EGRESS_CONFIG" <<-EOF
		allow-private 127.0.0.1:$TEST_PORT
		allow localhost:$TEST_PORT
		allow 127.0.0.1:9
	EOF
	# The same, and the mirror for downloads only.
	export DOWNLOAD_CONF=$BATS_FILE_TMPDIR/download.conf
	cp "$BRIG_EGRESS_CONFIG" "$DOWNLOAD_CONF"
	echo "download $MIRROR_HOST" >>"$DOWNLOAD_CONF"
	"$BRIG" --root "$SB_ROOT" sandbox create --network none --memory 256M --data-size 64M d1 \
		>"$BATS_FILE_TMPDIR/d1.out" 2>&1 || true
	"$BRIG" --root "$SB_ROOT" sandbox create --network none --memory 256M --data-size 4M d2 \
		>"$BATS_FILE_TMPDIR/d2.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in d1 d2; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	kill "$(cat "$BATS_FILE_TMPDIR/www.pid")" 2>/dev/null || true
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -n "$MIRROR" ] || fail "no http:// source in apt's sources"
	[ -x "$BRIG_FETCH" ] || fail "no brig-fetch at $BRIG_FETCH: build it or set BRIG_FETCH"
	require_sandboxes d1 d2
}

teardown() {
	:
}

# in_sb ID SHELL_PROGRAM: run in the sandbox as its user.
in_sb() {
	sb exec "$1" -- sh -c "$2"
}

# listing ID: every name under /mnt/data, hidden ones too, sorted.
listing() {
	in_sb "$1" 'cd /mnt/data && find . | sort'
}

# fails WANT ID URL PATH [FLAG...]: the download fails with the one line
# "brig: sandbox download: WANT", and /mnt/data is as it was.
fails() {
	local want=$1 id=$2 url=$3 path=$4 before
	shift 4
	before=$(listing "$id")
	run sb download "$@" "$id" "$url" "$path"
	[ "$status" -eq 1 ] || fail "exit $status: $output"
	[ "$output" = "brig: sandbox download: $want" ] || fail "got: $output"
	[ "$(listing "$id")" = "$before" ] || fail "/mnt/data changed: $(listing "$id")"
}

@test "sandbox download: a file of the host's apt mirror, owned by the sandbox user, the same bytes" {
	export BRIG_EGRESS_CONFIG=$DOWNLOAD_CONF
	local url=$MIRROR/dists/$SUITE/Release
	curl -fsS -o "$BATS_TEST_TMPDIR/Release" "$url"
	local size
	size=$(stat -c %s "$BATS_TEST_TMPDIR/Release")
	run sb download d1 "$url" /mnt/data/
	[ "$status" -eq 0 ]
	[ "$output" = "/mnt/data/Release $size bytes" ]
	run in_sb d1 'stat -c "%u:%g %a %s" Release && sha256sum <Release'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "1000:1000 644 $size" ]
	[ "${lines[1]}" = "$(sha256sum <"$BATS_TEST_TMPDIR/Release")" ]
	in_sb d1 'rm Release'
}

@test "sandbox download: PATH names the file, in a directory of the sandbox's" {
	in_sb d1 'mkdir -p sub'
	run sb download d1 "$WWW/hello.txt" sub/greeting
	[ "$status" -eq 0 ]
	[ "$output" = "/mnt/data/sub/greeting 6 bytes" ]
	# A directory PATH gets the URL's name; an existing file is replaced.
	run sb download d1 "$WWW/blob" /mnt/data/sub
	[ "$output" = "/mnt/data/sub/blob 100000 bytes" ]
	run sb download d1 "$WWW/hello.txt" sub/blob
	[ "$status" -eq 0 ]
	run in_sb d1 'cat sub/greeting sub/blob && stat -c %u sub/blob'
	[ "$(squeeze "$output")" = "hello hello 1000" ]
	in_sb d1 'rm -r sub'
}

@test "sandbox download: a host egress.conf does not name is refused, and nothing is left" {
	fails "host \`$MIRROR_HOST\` is not allowed ($BRIG_EGRESS_CONFIG: allow/download)" \
		d1 "$MIRROR/dists/$SUITE/Release" /mnt/data/
}

@test "sandbox download: a download entry lets through a host that allow does not" {
	local url=$MIRROR/dists/$SUITE/Release
	fails "host \`$MIRROR_HOST\` is not allowed ($BRIG_EGRESS_CONFIG: allow/download)" d1 "$url" r1
	export BRIG_EGRESS_CONFIG=$DOWNLOAD_CONF
	run sb download d1 "$url" r1
	[ "$status" -eq 0 ]
	[[ "$output" == "/mnt/data/r1 "*" bytes" ]]
	in_sb d1 'grep -q "^Suite:" r1 && rm r1'
}

@test "sandbox download: an HTTP error is one line, and nothing is left" {
	fails "$WWW/missing.txt: HTTP 404" d1 "$WWW/missing.txt" /mnt/data/
}

@test "sandbox download: past the size cap (--max-size, egress.conf's) nothing is left" {
	fails "$WWW/blob: larger than the 10K cap" d1 "$WWW/blob" /mnt/data/ --max-size 10K
	cp "$BRIG_EGRESS_CONFIG" "$BATS_TEST_TMPDIR/cap.conf"
	echo "download-max-size 50K" >>"$BATS_TEST_TMPDIR/cap.conf"
	BRIG_EGRESS_CONFIG=$BATS_TEST_TMPDIR/cap.conf fails "$WWW/blob: larger than the 50K cap" \
		d1 "$WWW/blob" /mnt/data/
	# The flag decides over the file's default.
	BRIG_EGRESS_CONFIG=$BATS_TEST_TMPDIR/cap.conf run sb download --max-size 1M d1 "$WWW/blob" /mnt/data/
	[ "$status" -eq 0 ]
	in_sb d1 'rm blob'
}

@test "sandbox download: past the data quota, one line and nothing left" {
	fails "$WWW/big: /mnt/data is full (quota)" d2 "$WWW/big" /mnt/data/
	# The space came back: a smaller file fits.
	run sb download d2 "$WWW/blob" /mnt/data/
	[ "$status" -eq 0 ]
}

@test "sandbox download: --timeout ends a download that stalls, and nothing is left" {
	local before
	before=$(listing d1)
	run sb download --timeout 2s d1 "$WWW/slow" slow
	[ "$status" -eq 1 ]
	[[ "$output" == "brig: sandbox download: $WWW/slow: timed out ("* ]]
	[ "$(listing d1)" = "$before" ]
}

@test "sandbox download: a PATH out of /mnt/data is refused" {
	fails "\`../hello.txt\`: \`..\` is not allowed in a path" d1 "$WWW/hello.txt" ../hello.txt
	fails "\`/mnt/data/a/../../x\`: \`..\` is not allowed in a path" \
		d1 "$WWW/hello.txt" /mnt/data/a/../../x
	fails "\`/etc/hello.txt\`: only /mnt/data is reachable" d1 "$WWW/hello.txt" /etc/hello.txt
	[ ! -e "$BRIG_SANDBOX_DIR/hello.txt" ]
	[ ! -e "$BRIG_SANDBOX_DIR/d1/hello.txt" ]
	[ ! -e /etc/hello.txt ]
}

@test "sandbox download: symlinks the sandbox planted are not followed out of /mnt/data" {
	local passwd
	passwd=$(sha256sum </etc/passwd)
	in_sb d1 'ln -s / top && ln -s /etc etc && ln -s /etc/passwd pw'
	# `top` is /mnt/data itself, as the data tree is the whole world.
	run sb download d1 "$WWW/hello.txt" top/
	[ "$status" -eq 0 ]
	[ "$output" = "/mnt/data/top/hello.txt 6 bytes" ]
	[ ! -e /hello.txt ]
	run in_sb d1 'cat /mnt/data/hello.txt'
	[ "$output" = hello ]
	# /etc inside the tree is no directory: nothing is written.
	run sb download d1 "$WWW/hello.txt" etc/passwd
	[ "$status" -eq 1 ]
	# A link as the file itself is replaced, never written through.
	run sb download d1 "$WWW/hello.txt" pw
	[ "$status" -eq 0 ]
	[ "$(sha256sum </etc/passwd)" = "$passwd" ]
	run in_sb d1 'test -L pw || cat pw'
	[ "$output" = hello ]
	in_sb d1 'rm top etc pw hello.txt'
}

@test "sandbox download: redirects are followed up to 5, each hop checked" {
	run sb download d1 "$WWW/hops/5" five.txt
	[ "$status" -eq 0 ]
	run in_sb d1 'cat five.txt && rm five.txt'
	[ "$output" = hello ]
	fails "$WWW/hops/6: more than 5 redirects" d1 "$WWW/hops/6" six.txt
	fails "host \`example.org\` is not allowed ($BRIG_EGRESS_CONFIG: allow/download)" \
		d1 "$WWW/redirect?to=http://example.org/x" x
	fails "\`file:///etc/passwd\`: not an http:// or https:// URL" \
		d1 "$WWW/redirect?to=file:///etc/passwd" x
}

@test "sandbox download: loopback needs allow-private, by name or IP, redirected or not" {
	run sb download d1 "http://localhost:$TEST_PORT/hello.txt" x
	[ "$status" -eq 1 ]
	[[ "$output" == "brig: sandbox download: host \`localhost\`: "*" is not a public address (it may be with allow-private)" ]]
	# So does a redirect to it from an allowed host.
	run sb download d1 "$WWW/redirect?to=http://localhost:$TEST_PORT/hello.txt" x
	[ "$status" -eq 1 ]
	[[ "$output" == *"is not a public address"* ]]
	run in_sb d1 'test ! -e x'
	[ "$status" -eq 0 ]
	fails "host \`127.0.0.1:9\`: an IP address must be listed with allow-private ($BRIG_EGRESS_CONFIG)" \
		d1 http://127.0.0.1:9/x x
}

@test "sandbox download: only http and https, and a URL without a file name needs one in PATH" {
	fails "\`ftp://$MIRROR_HOST/x\`: only http:// and https:// URLs" d1 "ftp://$MIRROR_HOST/x" /mnt/data/
	fails "$WWW/ names no file: give \`/mnt/data/\` a file name" d1 "$WWW/" /mnt/data/
	run sb download d1 "$WWW/" index.html
	[ "$status" -eq 0 ]
	in_sb d1 'grep -q hello.txt index.html && rm index.html'
}

@test "sandbox download: a missing sandbox, missing arguments" {
	run sb download nosuch "$WWW/hello.txt" x
	[ "$status" -eq 1 ]
	[[ "$output" == "brig: sandbox download: sandbox \`nosuch\`: "* ]]
	run sb download d1 "$WWW/hello.txt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"sandbox id, URL and path"* ]]
}
