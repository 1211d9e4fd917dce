#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031,SC2154 # programs sent as written; the
# globals the request helpers set in a test (a subshell of its own), bats's $stderr
# `brig serve`, the HTTP/JSON API of docs/api.md, driven as its clients
# drive it: curl over the unix socket, and contrib/brig_client.py. One
# server for the file (its socket, token, state root and sandbox home in
# the file's temp dir), started in setup_file and again by the restart
# test. Two sandboxes made in setup_file serve most tests: api1 (64M of
# data) and apiq (8M, for the quota); the others make and remove their own.
# Every sandbox is on the `none` network: downloads are the host's, from a
# test server on its loopback that the file's own egress.conf lists. Needs
# what sandbox.bats needs (the sandbox tree, brig-init, loop devices, ext4,
# cgroups), and curl and python3 on the host.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
TOP=${top_srcdir:-$BATS_TEST_DIRNAME/../..}

# ------------------------------------------------------------ the server ----

# api_up: the server answers an authorised request.
api_up() {
	[ -S "$API_SOCK" ] && [ "$(curl -s --max-time 5 --unix-socket "$API_SOCK" -o /dev/null -w '%{http_code}' \
		-H "Authorization: Bearer $API_TOKEN" http://localhost/v1/sandboxes)" = 200 ]
}

# start_server: `brig serve` in the background on $API_SOCK, with the
# file's token, until it answers (~10 s). Its log: $API_DIR/serve.log.
start_server() {
	local rootfs=() i
	[ -z "${BRIG_SANDBOX_ROOTFS:-}" ] || rootfs=(--rootfs "$BRIG_SANDBOX_ROOTFS")
	"$BRIG" --root "$SB_ROOT" serve --listen "unix:$API_SOCK" --token-file "$API_DIR/token" "${rootfs[@]}" \
		</dev/null >>"$API_DIR/serve.log" 2>&1 3>&- &
	echo $! >"$API_DIR/serve.pid"
	for i in $(seq 100); do
		api_up && return 0
		sleep 0.1
	done
	fail "brig serve does not answer: $(tail -n 5 "$API_DIR/serve.log")"
}

# stop_server: SIGTERM, and wait until it is gone (~10 s, then SIGKILL).
stop_server() {
	local pid i
	pid=$(cat "$API_DIR/serve.pid" 2>/dev/null) || return 0
	rm -f "$API_DIR/serve.pid"
	kill "$pid" 2>/dev/null || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	fail "brig serve (pid $pid) did not stop at SIGTERM"
}

# start_www: a plain HTTP server on the host's loopback, serving
# $BATS_FILE_TMPDIR/www on $WWW_PORT.
start_www() {
	mkdir -p "$BATS_FILE_TMPDIR/www"
	echo hello >"$BATS_FILE_TMPDIR/www/hello.txt"
	head -c 20971520 /dev/zero >"$BATS_FILE_TMPDIR/www/big.bin"
	export WWW_PORT=$((20000 + RANDOM % 20000))
	(cd "$BATS_FILE_TMPDIR/www" && exec python3 -m http.server --bind 127.0.0.1 "$WWW_PORT") \
		</dev/null >"$BATS_FILE_TMPDIR/www.log" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/www.pid"
	wait_port "$WWW_PORT"
}

# create_sandbox ID JSON: POST /v1/sandboxes in setup_file; what it answered
# is in $BATS_FILE_TMPDIR/ID.out for require_sandboxes to show.
create_sandbox() {
	curl -sS --max-time 300 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
		-d "$2" -w '\nstatus %{http_code}\n' http://localhost/v1/sandboxes >"$BATS_FILE_TMPDIR/$1.out" 2>&1 || true
}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	export API_DIR=$BATS_FILE_TMPDIR/api
	export API_SOCK=$API_DIR/api.sock
	export API_TOKEN
	mkdir -p "$API_DIR"
	API_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && echo "$API_TOKEN" >"$API_DIR/token")
	# The build tree's helper programs, not installed ones: the server
	# (brig-api), the downloads' fetcher, the proxy (one of the file's own).
	local prog var
	for prog in brig-api brig-fetch brig-egress; do
		var=$(echo "$prog" | tr a-z- A-Z_)
		if [ -z "${!var:-}" ] && [ -x "$(dirname "$BRIG")/$prog" ]; then
			export "$var=$(dirname "$BRIG")/$prog"
		fi
	done
	export BRIG_EGRESS_DIR=$BATS_FILE_TMPDIR/egress
	export BRIG_EGRESS_LOG=$BATS_FILE_TMPDIR/egress.log
	export BRIG_EGRESS_CONFIG=$BATS_FILE_TMPDIR/egress.conf
	# The file's own template store (brig sandbox template), the server's too.
	export BRIG_TEMPLATE_DIR=$BATS_FILE_TMPDIR/templates
	start_www
	cat >"$BRIG_EGRESS_CONFIG" <<-EOF
		# downloads from the test server only
		allow-private 127.0.0.1:$WWW_PORT
		download 127.0.0.1:$WWW_PORT
	EOF
	start_server || return 0
	create_sandbox api1 '{"id": "api1", "memory": "1G", "pids": 256, "data_size": "64M", "network": "none"}'
	create_sandbox apiq '{"id": "apiq", "memory": "256M", "pids": 64, "data_size": "8M", "network": "none"}'
}

teardown_file() {
	[ -n "${API_DIR:-}" ] || return 0
	local d pid
	stop_server || true
	for d in "$BRIG_SANDBOX_DIR"/*/; do
		[ -d "$d" ] || continue
		"$BRIG" --root "$SB_ROOT" sandbox rm "$(basename "$d")" >/dev/null 2>&1 || true
	done
	kill "$(cat "$BATS_FILE_TMPDIR/www.pid")" 2>/dev/null || true
	sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" 2>/dev/null | while read -r pid; do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != brig-egress ] || kill "$pid"
	done
	return 0
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -x "$BRIG_INIT" ] || fail "no brig-init at $BRIG_INIT: build it or set BRIG_INIT"
	# A test that stopped the server and failed before starting it again
	# must not take the next ones with it.
	api_up || start_server
	require_sandboxes api1 apiq
}

teardown() {
	# The TCP test's server, if it is still there.
	if [ -s "$BATS_TEST_TMPDIR/tcp.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/tcp.pid")" 2>/dev/null || true
	fi
}

# ------------------------------------------------------------- requests ----

# raw METHOD PATH [CURL_ARG...]: the request over the socket, as given;
# sets $code (the status, 000 without an answer) and $body (the answer's
# text; byte for byte in $BATS_TEST_TMPDIR/body, the headers in
# $BATS_TEST_TMPDIR/headers).
raw() {
	local method=$1 path=$2
	shift 2
	rm -f "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/headers"
	code=$(curl -sS --max-time 120 --unix-socket "$API_SOCK" -X "$method" \
		-D "$BATS_TEST_TMPDIR/headers" -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
		"$@" "http://localhost$path") || true
	body=$(tr -d '\0' <"$BATS_TEST_TMPDIR/body" 2>/dev/null || true)
}

# req METHOD PATH [CURL_ARG...]: raw, with the token.
req() {
	local method=$1 path=$2
	shift 2
	raw "$method" "$path" -H "Authorization: Bearer $API_TOKEN" "$@"
}

# header NAME: the value of the last answer's header NAME.
header() {
	grep -i "^$1:" "$BATS_TEST_TMPDIR/headers" | tail -n 1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//'
}

# jqe FILTER [JQ_ARG...]: FILTER holds on the last answer's body.
jqe() {
	local filter=$1
	shift
	jq -e "$@" "$filter" <<<"$body" >/dev/null || fail "not true: $filter, of: ${body:0:3000}"
}

# assert_error STATUS [WHAT]: the last answer has that status and is one
# line of JSON, {"error": "..."}.
assert_error() {
	[ "$code" = "$1" ] || fail "${2:+$2: }expected $1, got $code: ${body:0:500}"
	[[ "$(header content-type)" == application/json* ]] || fail "${2:+$2: }content-type: $(header content-type)"
	jq -e 'keys == ["error"] and (.error | type == "string" and length > 0 and (contains("\n") | not))' \
		<<<"$body" >/dev/null || fail "${2:+$2: }not one error line: ${body:0:500}"
}

# assert_json STATUS: the last answer has that status and a JSON body.
assert_json() {
	[ "$code" = "$1" ] || fail "expected $1, got $code: ${body:0:500}"
	[[ "$(header content-type)" == application/json* ]] || fail "content-type: $(header content-type)"
	jq -e . <<<"$body" >/dev/null || fail "not JSON: ${body:0:500}"
}

# A time as the API writes it (RFC 3339, UTC).
RFC3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'

now() {
	date +%s.%N
}

# took_less START SECONDS: less than SECONDS have passed since START (now).
took_less() {
	local t
	t=$(now)
	awk -v s="$1" -v t="$t" -v m="$2" 'BEGIN { exit !(t - s < m) }' ||
		fail "took $(awk -v s="$1" -v t="$t" 'BEGIN { print t - s }') s, not under $2 s"
}

# took_more START SECONDS: at least SECONDS have passed since START.
took_more() {
	local t
	t=$(now)
	awk -v s="$1" -v t="$t" -v m="$2" 'BEGIN { exit !(t - s >= m) }' ||
		fail "took $(awk -v s="$1" -v t="$t" 'BEGIN { print t - s }') s, less than $2 s"
}

# ----------------------------------------------------------------- exec ----

# exec_json ID JSON: POST /v1/sandboxes/ID/exec, which must stream; sets
# $events (its lines), $out and $err (the stdout and stderr events
# joined, each as a JSON string), $last (the last event, keys sorted) and
# $n_exit (how many events have "exit").
exec_json() {
	req POST "/v1/sandboxes/$1/exec" -N -d "$2"
	[ "$code" = 200 ] || fail "exec in $1: $code: $body"
	events=$body
	jq -e -s 'length > 0 and all(.[]; type == "object")' <<<"$events" >/dev/null ||
		fail "exec in $1: not one JSON object a line: ${events:0:1000}"
	out=$(jq -cs '[.[] | .stdout // empty] | add // ""' <<<"$events")
	err=$(jq -cs '[.[] | .stderr // empty] | add // ""' <<<"$events")
	last=$(tail -n 1 <<<"$events" | jq -cS .)
	n_exit=$(jq -s '[.[] | select(has("exit"))] | length' <<<"$events")
}

# exec_cmd ID ARG...: exec_json with {"cmd": [ARG...]}.
exec_cmd() {
	local id=$1
	shift
	exec_json "$id" "$(jq -cn --argjson c "$(json_array "$@")" '{cmd: $c}')"
}

# text JSON_STRING: the string itself.
text() {
	jq -r . <<<"$1"
}

# procs_in ID REGEX: how many processes of the sandbox have a command line
# (arguments joined by spaces, one trailing) that matches REGEX, which
# must be anchored with ^ so as not to match the counting shell.
procs_in() {
	exec_cmd "$1" sh -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -cE "$0" || true' "$2"
	text "$out"
}

# ------------------------------------------------------------- sessions ----

# start_session ID JSON: POST /v1/sandboxes/ID/sessions, which must answer 201.
start_session() {
	req POST "/v1/sandboxes/$1/sessions" -d "$2"
	[ "$code" = 201 ] || fail "session start in $1: $code: $body"
}

# say ID NAME CHARS [WAIT [UNTIL]]: types CHARS into the session; the
# answer in $body, its output without the terminal's \r in $said.
say() {
	local b
	b=$(jq -cn --arg c "$3" --arg w "${4:-0.5}" --arg u "${5:-}" \
		'{chars: $c, wait: ($w | tonumber)} + (if $u == "" then {} else {until: $u} end)')
	req POST "/v1/sandboxes/$1/sessions/$2/input" -d "$b"
	[ "$code" = 200 ] || fail "input to $2: $code: $body"
	said=$(jq -r .output <<<"$body" | tr -d '\r')
}

# hear ID NAME [CURL_ARG...]: reads the session (GET; -G --data-urlencode
# for wait and until), like say.
hear() {
	local id=$1 name=$2
	shift 2
	req GET "/v1/sandboxes/$id/sessions/$name" -G "$@"
	[ "$code" = 200 ] || fail "read of $name: $code: $body"
	said=$(jq -r .output <<<"$body" | tr -d '\r')
}

# said_line LINE: the last output has LINE as a line of its own.
said_line() {
	grep -qxF -- "$1" <<<"$said" || fail "no line '$1' in the output: $said"
}

# ---------------------------------------------------------------- tests ----

@test "serve: the socket is 0600; no token, a wrong one or another scheme is 401, before any route" {
	[ "$(stat -c %a "$API_SOCK")" = 600 ]
	local h hdr path
	for h in "" "Authorization: Bearer wrong" "Authorization: Bearer ${API_TOKEN}x" \
		"Authorization: Bearer ${API_TOKEN:0:8}" "Authorization: Basic $API_TOKEN" \
		"Authorization: $API_TOKEN" "Authorization: Bearer"; do
		hdr=()
		[ -z "$h" ] || hdr=(-H "$h")
		for path in /v1/sandboxes /v1/sandboxes/api1 /v2/nothing; do
			raw GET "$path" "${hdr[@]}"
			assert_error 401 "'$h' GET $path"
			[[ "$(header www-authenticate)" == Bearer* ]] || fail "no WWW-Authenticate: Bearer with 401"
		done
	done
	# Not a byte of a refused request is acted on.
	raw POST /v1/sandboxes -H "Authorization: Bearer wrong" -d '{"id": "noauth"}'
	assert_error 401
	req GET /v1/sandboxes/noauth
	assert_error 404
	[ ! -e "$BRIG_SANDBOX_DIR/noauth" ]
	req GET /v1/sandboxes
	[ "$code" = 200 ]
	# The scheme's name is not case sensitive.
	raw GET /v1/sandboxes -H "Authorization: bearer $API_TOKEN"
	[ "$code" = 200 ]
}

@test "serve: TCP needs a token file, then answers with the token only; SIGTERM ends it with 0" {
	local dir=$BATS_TEST_TMPDIR/tcp port pid i rc=0
	mkdir -p "$dir"
	port=$((20000 + RANDOM % 20000))
	run --separate-stderr timeout 10 "$BRIG" --root "$dir/state" serve --listen "tcp:127.0.0.1:$port"
	[ "$status" -ne 124 ] || fail "brig serve on TCP without a token file ran on"
	assert_one_line_error token
	BRIG_SANDBOX_DIR=$dir/home "$BRIG" --root "$dir/state" serve --listen "tcp:127.0.0.1:$port" \
		--token-file "$API_DIR/token" </dev/null >"$dir/log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$BATS_TEST_TMPDIR/tcp.pid"
	for i in $(seq 100); do
		code=$(curl -s -o "$dir/body" -w '%{http_code}' -H "Authorization: Bearer $API_TOKEN" \
			"http://127.0.0.1:$port/v1/sandboxes") || true
		[ "$code" = 200 ] && break
		sleep 0.1
	done
	[ "$code" = 200 ] || fail "brig serve on TCP: $code: $(cat "$dir/log")"
	jq -e '.sandboxes == []' "$dir/body"
	code=$(curl -s -o "$dir/body" -w '%{http_code}' "http://127.0.0.1:$port/v1/sandboxes") || true
	[ "$code" = 401 ]
	code=$(curl -s -o "$dir/body" -w '%{http_code}' -H "Authorization: Bearer nope" \
		"http://127.0.0.1:$port/v1/sandboxes/api1") || true
	[ "$code" = 401 ]
	kill "$pid"
	wait "$pid" || rc=$?
	rm -f "$BATS_TEST_TMPDIR/tcp.pid"
	[ "$rc" = 0 ] || fail "brig serve exited $rc after SIGTERM: $(cat "$dir/log")"
}

@test "routes: an unknown path is 404, another method 405 with Allow; errors are one line of JSON" {
	local p mp
	for p in / /v1 /v2/sandboxes /v1/sandbox /v1/sandboxes/api1/nothing /v1/sandboxes/api1/sessions/x/y/z; do
		req GET "$p"
		assert_error 404 "GET $p"
	done
	for mp in "PATCH /v1/sandboxes" "DELETE /v1/sandboxes" "PUT /v1/sandboxes/api1" "POST /v1/sandboxes/api1" \
		"GET /v1/sandboxes/api1/exec" "PUT /v1/sandboxes/api1/sessions" "GET /v1/sandboxes/api1/download" \
		"GET /v1/sandboxes/api1/sessions/x/input" "DELETE /v1/sandboxes/api1/files/x" "POST /v1/sandboxes/api1/files/x"; do
		req "${mp%% *}" "${mp#* }"
		assert_error 405 "$mp"
		[ -n "$(header allow)" ] || fail "$mp: 405 without Allow"
	done
}

@test "a sandbox's life: 201 with what was asked, 409 for its id again, its exec_timeout, DELETE 204, then 404" {
	local pid t0
	req POST /v1/sandboxes -d '{"id": "apit1", "memory": "256M", "pids": 64, "cpus": "0.5", "data_size": 16777216,
		"network": "none", "ttl": "1h", "idle_timeout": 600, "exec_timeout": "2s"}'
	assert_json 201
	jqe '.id == "apit1" and .state == "running"'
	jqe '.limits == {"memory": 268435456, "pids": 64, "cpus": 0.5, "data_size": 16777216}'
	jqe '.lifetime.ttl == 3600 and .lifetime.idle_timeout == 600 and .lifetime.exec_timeout == 2'
	jqe '.lifetime.expires_in > 500 and .lifetime.expires_in <= 600'
	# The limits are the cgroup's.
	pid=$("$BRIG" --root "$SB_ROOT" state apit1 | jq -r .pid)
	[ "$(pid_memory_limit "$pid")" = 268435456 ]
	[ "$(pid_pids_limit "$pid")" = 64 ]
	[ "$(pid_cpu_max "$pid")" = "50000 100000" ]
	req POST /v1/sandboxes -d '{"id": "apit1"}'
	assert_error 409
	# Its exec_timeout is the timeout of every exec that names none.
	t0=$(now)
	exec_cmd apit1 sleep 30
	took_less "$t0" 15
	[ "$last" = '{"exit":124,"timeout":true}' ]
	exec_json apit1 '{"cmd": ["sh", "-c", "sleep 3; echo slept"], "timeout": 10}'
	[ "$last" = '{"exit":0}' ]
	[ "$out" = '"slept\n"' ]
	req DELETE /v1/sandboxes/apit1
	[ "$code" = 204 ] || fail "delete: $code: $body"
	[ -z "$body" ]
	[ ! -e "$BRIG_SANDBOX_DIR/apit1" ]
	[ ! -e "$SB_ROOT/apit1" ]
	req GET /v1/sandboxes/apit1
	assert_error 404
	req DELETE /v1/sandboxes/apit1
	assert_error 404
	req POST /v1/sandboxes/apit1/exec -d '{"cmd": ["true"]}'
	assert_error 404
	req GET /v1/sandboxes
	jqe 'all(.sandboxes[]; .id != "apit1")'
}

@test "create from a template: its image's WorkingDir, Env and User; an unknown one is 400" {
	python3 "$BATS_TEST_DIRNAME/template-image.py" busybox "$BATS_TEST_TMPDIR/bb.tar"
	"$BRIG" sandbox template import apibb "$BATS_TEST_TMPDIR/bb.tar" 2>/dev/null
	req POST /v1/sandboxes -d '{"id": "apitpl", "template": "apibb", "network": "none"}'
	assert_json 201
	exec_cmd apitpl sh -c 'pwd; echo "$GREETING"; id -u'
	[ "$last" = '{"exit":0}' ]
	[ "$(text "$out")" = "$(printf '/work\nhi\n1001')" ]
	req DELETE /v1/sandboxes/apitpl
	[ "$code" = 204 ] || fail "delete: $code: $body"
	"$BRIG" sandbox template rm apibb
	req POST /v1/sandboxes -d '{"id": "apitpl2", "template": "nosuch"}'
	assert_error 400
	[[ "$body" == *'no template `nosuch`'* ]]
	[ ! -e "$BRIG_SANDBOX_DIR/apitpl2" ]
}

@test "create: a bad field is 400, and nothing is made" {
	local b
	for b in '{"id": "b1", "colour": "red"}' '{"id": "b1", "pids": "many"}' '{"id": "b1", "pids": 2}' \
		'{"id": "b1", "memory": "12Q"}' '{"id": "b1", "memory": "1M"}' '{"id": "b1", "data_size": -5}' \
		'{"id": "b1", "data_size": "1K"}' '{"id": "b1", "cpus": "lots"}' '{"id": "b1", "cpus": 0}' \
		'{"id": "b1", "network": "wifi"}' '{"id": "b1", "ttl": "soon"}' '{"id": "b1", "idle_timeout": "-1s"}' \
		'{"id": "b1", "exec_timeout": true}' '{"id": "b1", "memory": ["1G"]}' \
		'{"id": "b1", "rootfs": "/etc"}' '{"id": "b1", "rootfs": "../rootfs"}' '{"id": "b1", "rootfs": "nosuch"}' \
		'{}' '{"id": ""}' '{"id": ".b1"}' '{"id": "a/b"}' '{"id": 7}' '[]' '"b1"' '{"id": "b1"' 'id=b1' '' \
		'{"id": "b 1"}' '{"id": "b1\n"}' '{"id": "b\u00e91"}'; do
		req POST /v1/sandboxes -d "$b"
		assert_error 400 "$b"
	done
	req GET /v1/sandboxes
	jqe 'all(.sandboxes[]; .id != "b1" and .id != ".b1" and .id != "a" and .id != "b 1")'
	[ ! -e "$BRIG_SANDBOX_DIR/b1" ]
	[ ! -e "$BRIG_SANDBOX_DIR/b 1" ]
	[ ! -e "$SB_ROOT/b1" ]
}

@test "create with a tree by name: the full toolset, and the sandbox's own limits inside" {
	req POST /v1/sandboxes -d '{"id": "apifull", "rootfs": "full", "memory": "512M", "cpus": 1, "data_size": "16M"}'
	[ "$code" = 201 ] || fail "create: $code: $body"
	exec_cmd apifull sh -c 'nproc; python3 -c "import numpy; print(numpy.arange(4).sum())"; awk "/^MemTotal:/ { print \$2 }" /proc/meminfo'
	[ "$last" = '{"exit":0}' ] || fail "$events"
	[ "$(text "$out")" = "$(printf '1\n6\n524288')" ]
	req DELETE /v1/sandboxes/apifull
	[ "$code" = 204 ]
}

@test "get and list: state, age, limits, data and usage of a running sandbox" {
	local used created
	req GET /v1/sandboxes/api1
	assert_json 200
	jqe '.id == "api1" and .state == "running" and .network == "none"'
	jqe '.created | test($re)' --arg re "$RFC3339"
	jqe '(.age | type) == "number" and .age >= 0 and .age < 3600'
	jqe '.limits == {"memory": 1073741824, "pids": 256, "cpus": 2, "data_size": 67108864}'
	jqe '.data.size > 32000000 and .data.size <= 67108864 and .data.used >= 0 and .data.used < .data.size'
	jqe '.usage.memory > 0 and .usage.cpu_ns > 0 and .usage.pids >= 1'
	jqe '.lifetime == {"ttl": null, "idle_timeout": null, "exec_timeout": null, "expires_in": null, "expires_for": null}'
	created=$(jq -r .created <<<"$body")
	[ "$(date -d "$created" +%s)" -le "$(date +%s)" ]
	# data follows what is written.
	used=$(jq .data.used <<<"$body")
	exec_cmd api1 dd if=/dev/urandom of=/mnt/data/fill bs=1M count=4 conv=fsync status=none
	[ "$last" = '{"exit":0}' ]
	req GET /v1/sandboxes/api1
	jqe '.data.used >= $u + 4000000' --argjson u "$used"
	exec_cmd api1 rm /mnt/data/fill
	req GET /v1/sandboxes
	[ "$code" = 200 ]
	jqe '(.sandboxes | map(.id)) as $ids | ($ids | index("api1")) != null and ($ids | index("apiq")) != null'
	jqe '(.sandboxes | map(.id)) == (.sandboxes | map(.id) | sort)'
	jqe '.sandboxes[] | select(.id == "apiq") | .state == "running" and .limits.data_size == 8388608'
}

@test "exec: events come as the command writes them, in order, exit last" {
	local ia ib ic ie ta tb
	curl -sS -N --max-time 60 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
		-D "$BATS_TEST_TMPDIR/headers" \
		-d '{"cmd": ["sh", "-c", "echo a; sleep 1; echo b >&2; sleep 0.3; echo c"]}' \
		http://localhost/v1/sandboxes/api1/exec |
		while IFS= read -r line; do printf '%s %s\n' "$(now)" "$line"; done >"$BATS_TEST_TMPDIR/timed"
	[[ "$(header content-type)" == application/x-ndjson* ]]
	[[ "$(header transfer-encoding)" == chunked* ]]
	events=$(cut -d' ' -f2- "$BATS_TEST_TMPDIR/timed")
	jq -e -s 'all(.[]; type == "object")' <<<"$events"
	[ "$(jq -cs '[.[] | .stdout // empty] | add' <<<"$events")" = '"a\nc\n"' ]
	[ "$(jq -cs '[.[] | .stderr // empty] | add' <<<"$events")" = '"b\n"' ]
	ia=$(jq -s 'map(.stdout // "" | contains("a")) | index(true)' <<<"$events")
	ib=$(jq -s 'map(.stderr // "" | contains("b")) | index(true)' <<<"$events")
	ic=$(jq -s 'map(.stdout // "" | contains("c")) | index(true)' <<<"$events")
	ie=$(jq -s 'map(has("exit")) | index(true)' <<<"$events")
	[ "$ia" -lt "$ib" ]
	[ "$ib" -lt "$ic" ]
	[ "$ic" -lt "$ie" ]
	# exit is the last event, and the only one.
	[ "$ie" -eq "$(($(wc -l <"$BATS_TEST_TMPDIR/timed") - 1))" ]
	[ "$(tail -n 1 <<<"$events" | jq -cS .)" = '{"exit":0}' ]
	# "a" was sent when it was written, not with the rest at the end.
	ta=$(awk -v n=$((ia + 1)) 'NR == n { print $1 }' "$BATS_TEST_TMPDIR/timed")
	tb=$(awk -v n=$((ib + 1)) 'NR == n { print $1 }' "$BATS_TEST_TMPDIR/timed")
	awk -v a="$ta" -v b="$tb" 'BEGIN { exit !(b - a > 0.7) }' || fail "a at $ta, b at $tb: not streamed"
	# The order of lines of one stream, as the brief shell puts them.
	exec_cmd api1 sh -c 'echo a; sleep 0.3; echo b'
	[ "$out" = '"a\nb\n"' ]
	[ "$(jq -cs 'map(.stdout // empty)' <<<"$events")" = '["a\n","b\n"]' ]
}

@test "exec: the exit status, 128+N for a signal; output not in UTF-8, in characters of two bytes, and in bulk" {
	exec_cmd api1 sh -c 'exit 3'
	[ "$last" = '{"exit":3}' ]
	[ "$n_exit" = 1 ]
	exec_cmd api1 sh -c 'kill -9 $$'
	[ "$last" = '{"exit":137}' ]
	exec_cmd api1 false
	[ "$last" = '{"exit":1}' ]
	exec_cmd api1 true
	[ "$(jq -cS . <<<"$events")" = '{"exit":0}' ]
	# Bytes that aren't UTF-8 come as the characters of their Latin-1 reading.
	exec_cmd api1 printf '\377\376ok \303\251\n'
	[ "$out" = "$(jq -cn '"\u00ff\u00feok \u00e9\n"')" ]
	# A character is never cut between two events.
	exec_cmd api1 python3 -c 'import sys; sys.stdout.write("é" * 100000)'
	jq -e -s '([.[] | .stdout // empty] | add) == ("é" * 100000)' <<<"$events"
	exec_cmd api1 sh -c 'head -c 1000000 /dev/zero | tr "\0" x; echo tail >&2'
	jq -e -s '([.[] | .stdout // empty] | add) == ("x" * 1000000)' <<<"$events"
	jq -e -s 'all(.[]; (.stdout // "") | length <= 65536)' <<<"$events"
	[ "$err" = '"tail\n"' ]
	[ "$last" = '{"exit":0}' ]
}

@test "exec: a timeout kills the command's process group and ends with exit 124 and timeout true" {
	local t0
	t0=$(now)
	exec_json api1 '{"cmd": ["sh", "-c", "sleep 1001 & sleep 1002; echo never"], "timeout": 1}'
	took_less "$t0" 15
	[ "$last" = '{"exit":124,"timeout":true}' ]
	[ "$n_exit" = 1 ]
	[ "$out" = '""' ]
	sleep 0.5
	[ "$(procs_in api1 '^sleep 100[12] ')" = 0 ]
	t0=$(now)
	exec_json api1 '{"cmd": ["sleep", "5"], "timeout": 0.5}'
	took_less "$t0" 4
	[ "$last" = '{"exit":124,"timeout":true}' ]
	# A command that ends in time is left alone.
	exec_json api1 '{"cmd": ["sh", "-c", "sleep 0.2; echo done"], "timeout": 5}'
	[ "$last" = '{"exit":0}' ]
	[ "$out" = '"done\n"' ]
	# A duration string works too.
	exec_json api1 '{"cmd": ["sleep", "5"], "timeout": "700ms"}'
	[ "$last" = '{"exit":124,"timeout":true}' ]
	local b
	for b in '{"cmd": ["true"], "timeout": -1}' '{"cmd": ["true"], "timeout": 0}' \
		'{"cmd": ["true"], "timeout": "soon"}' '{"cmd": ["true"], "timeout": true}'; do
		req POST /v1/sandboxes/api1/exec -d "$b"
		assert_error 400 "$b"
	done
}

@test "exec: a client that hangs up has its command killed" {
	local n
	curl -s -N --max-time 2 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
		-d '{"cmd": ["sh", "-c", "sleep 1003 & sleep 1004"]}' http://localhost/v1/sandboxes/api1/exec || true
	n=$(procs_until 0 procs_in api1 '^sleep 100[34] ')
	[ "$n" = 0 ] || fail "the command outlived its client: $n processes"
}

@test "exec: stdin, env and cwd; the sandbox's user in /mnt/data by default; bad fields are 400" {
	exec_json api1 '{"cmd": ["sh", "-c", "tr a-z A-Z; echo rc=$?"], "stdin": "hello\nworld\n"}'
	[ "$out" = '"HELLO\nWORLD\nrc=0\n"' ]
	# Without stdin, end of file at once.
	exec_json api1 '{"cmd": ["sh", "-c", "cat; echo eof"]}'
	[ "$out" = '"eof\n"' ]
	exec_json api1 '{"cmd": ["sh", "-c", "echo \"$FOO|$BAR\"; pwd; id -u"], "env": {"FOO": "foo bar", "BAR": "x=y"}, "cwd": "/tmp"}'
	[ "$out" = '"foo bar|x=y\n/tmp\n1000\n"' ]
	exec_cmd api1 sh -c 'pwd; id -u; id -g; echo to-stderr >&2'
	[ "$out" = '"/mnt/data\n1000\n1000\n"' ]
	[ "$err" = '"to-stderr\n"' ]
	exec_json api1 '{"cmd": ["id", "-u"], "user": "1000"}'
	[ "$out" = '"1000\n"' ]
	local b
	for b in '{"cmd": ["id"], "user": "0"}' '{"cmd": ["id"], "user": "root"}' '{"cmd": ["pwd"], "cwd": "tmp"}' \
		'{"cmd": []}' '{}' '{"cmd": "id"}' '{"cmd": ["id", 1]}' '{"cmd": ["id"], "env": {"A": 1}}' \
		'{"cmd": ["id"], "env": {"A=B": "c"}}' '{"cmd": ["id"], "env": ["A=b"]}' '{"cmd": ["id"], "stdin": 5}' \
		'{"cmd": ["id"], "cwd": 5}' '{"cmd": ["id"], "colour": "red"}' '{"cmd": ["id"]' \
		'{"cmd": ["no-such-command"]}' '{"cmd": ["pwd"], "cwd": "/no/such/dir"}'; do
		req POST /v1/sandboxes/api1/exec -d "$b"
		assert_error 400 "$b"
	done
}

@test "a missing sandbox is 404 on every route" {
	local mp
	for mp in "GET /v1/sandboxes/nope" "DELETE /v1/sandboxes/nope" "POST /v1/sandboxes/nope/exec" \
		"POST /v1/sandboxes/nope/sessions" "GET /v1/sandboxes/nope/sessions" \
		"POST /v1/sandboxes/nope/sessions/x/input" "GET /v1/sandboxes/nope/sessions/x" \
		"DELETE /v1/sandboxes/nope/sessions/x" "PUT /v1/sandboxes/nope/files/x" \
		"GET /v1/sandboxes/nope/files/x" "GET /v1/sandboxes/nope/files/" "POST /v1/sandboxes/nope/download"; do
		case $mp in
		"POST /v1/sandboxes/nope/exec") req POST "${mp#* }" -d '{"cmd": ["true"]}' ;;
		"POST /v1/sandboxes/nope/sessions") req POST "${mp#* }" -d '{"name": "x"}' ;;
		*/input) req POST "${mp#* }" -d '{"chars": ""}' ;;
		*/download) req POST "${mp#* }" -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"x\"}" ;;
		PUT*) req PUT "${mp#* }" --data-binary x ;;
		*) req "${mp%% *}" "${mp#* }" ;;
		esac
		assert_error 404 "$mp"
	done
	[ ! -e "$BRIG_SANDBOX_DIR/nope" ]
}

@test "sessions: bash keeps its variables from one input to the next; listed; a live name is 409; DELETE kills it" {
	local pid i n b
	start_session api1 '{"name": "sh1", "env": {"SESS_MARK": "sh1-mark"}}'
	jqe '.name == "sh1" and .alive == true and (.pid | type) == "number" and .pid > 1'
	jqe '(.cmd | type) == "array" and (.cmd | length) > 0'
	pid=$(jq .pid <<<"$body")
	# Its pid is the sandbox's.
	exec_cmd api1 sh -c 'tr "\0" " " </proc/$0/cmdline' "$pid"
	[[ "$(text "$out")" == *bash* ]] || fail "pid $pid in the sandbox is: $(text "$out")"
	req POST /v1/sandboxes/api1/sessions -d '{"name": "sh1"}'
	assert_error 409
	say api1 sh1 $'x=5\n' 1
	jqe '.alive == true and .exit == null and .dropped == 0'
	say api1 sh1 $'echo $((x+1))\n' 10 $'^6\r?$'
	said_line 6
	start_session api1 '{"name": "sh0", "cmd": ["sh"]}'
	req GET /v1/sandboxes/api1/sessions
	[ "$code" = 200 ]
	jqe '.sessions[] | select(.name == "sh1") | .pid == $p and .alive == true and .exit == null and (.unread | type) == "number"' \
		--argjson p "$pid"
	jqe '.sessions[] | select(.name == "sh0") | .cmd == ["sh"]'
	jqe '(.sessions | map(.name)) == (.sessions | map(.name) | sort)'
	req DELETE /v1/sandboxes/api1/sessions/sh1
	[ "$code" = 204 ] || fail "kill: $code: $body"
	req DELETE /v1/sandboxes/api1/sessions/sh0
	[ "$code" = 204 ]
	req GET /v1/sandboxes/api1/sessions
	jqe 'all(.sessions[]; .name != "sh1" and .name != "sh0")'
	req POST /v1/sandboxes/api1/sessions/sh1/input -d '{"chars": "echo\n"}'
	assert_error 404
	req GET /v1/sandboxes/api1/sessions/sh1
	assert_error 404
	req DELETE /v1/sandboxes/api1/sessions/sh1
	assert_error 404
	# Its processes are gone.
	for i in $(seq 20); do
		exec_cmd api1 sh -c 'grep -l "SESS_MARK=sh1-mark" /proc/[0-9]*/environ 2>/dev/null | wc -l'
		n=$(text "$out")
		[ "$n" = 0 ] && break
		sleep 0.5
	done
	[ "$n" = 0 ] || fail "$n processes of the killed session are left"
	for b in '{}' '{"name": ""}' '{"name": 7}' '{"name": "a/b"}' '{"name": ".x"}' '{"name": "x", "cmd": []}' \
		'{"name": "x", "cmd": "bash"}' '{"name": "x", "cwd": 5}' '{"name": "x", "user": "0"}' \
		'{"name": "x", "colour": "red"}'; do
		req POST /v1/sandboxes/api1/sessions -d "$b"
		assert_error 400 "$b"
	done
}

@test "sessions: Ctrl-C interrupts the foreground program and the shell lives on" {
	local t0
	start_session api1 '{"name": "cc"}'
	say api1 cc $'sleep 1007\n' 1
	[ "$(procs_in api1 '^sleep 1007 ')" = 1 ]
	t0=$(now)
	say api1 cc $'\x03' 1
	jqe '.alive == true'
	say api1 cc $'echo alive-$((6*7))\n' 10 $'^alive-42\r?$'
	said_line alive-42
	took_less "$t0" 15
	[ "$(procs_in api1 '^sleep 1007 ')" = 0 ]
	req DELETE /v1/sandboxes/api1/sessions/cc
	[ "$code" = 204 ]
}

@test "sessions: a Python keeps x = 41 for print(x + 1), and survives its own Ctrl-C" {
	start_session api1 '{"name": "py", "cmd": ["python3", "-q", "-i"]}'
	jqe '.cmd == ["python3", "-q", "-i"] and .alive == true'
	say api1 py $'x = 41\n' 2
	say api1 py $'print(x + 1)\n' 10 $'^42\r?$'
	said_line 42
	say api1 py $'import time; time.sleep(100)\n' 1
	say api1 py $'\x03' 5 'KeyboardInterrupt'
	[[ "$said" == *KeyboardInterrupt* ]] || fail "no KeyboardInterrupt: $said"
	say api1 py $'print(x)\n' 10 $'^41\r?$'
	said_line 41
	jqe '.alive == true'
	req DELETE /v1/sandboxes/api1/sessions/py
	[ "$code" = 204 ]
}

@test "sessions: wait answers after quiet, until as soon as it matches, a read takes what is left" {
	local t0 b
	start_session api1 '{"name": "wt"}'
	say api1 wt '' 1
	t0=$(now)
	say api1 wt $'sleep 2; echo late-$((1+1))\n' 0.5
	took_less "$t0" 1.9
	refute grep -qx late-2 <<<"$said"
	# until ends the wait as soon as it matches: well before 5 s of quiet.
	t0=$(now)
	hear api1 wt --data-urlencode wait=5 --data-urlencode 'until=^late-2'
	took_less "$t0" 4.5
	said_line late-2
	# What was answered is gone; wait=0 answers at once.
	t0=$(now)
	hear api1 wt --data-urlencode wait=0
	took_less "$t0" 1
	refute grep -qx late-2 <<<"$said"
	# Without until, the answer waits for the quiet.
	t0=$(now)
	say api1 wt $'sleep 1; echo one; sleep 1; echo two\n' 1.5
	took_more "$t0" 2
	said_line one
	said_line two
	for b in '{"chars": "", "until": "("}' '{"chars": "", "wait": -1}' '{"chars": "", "wait": 601}' \
		'{"chars": "", "wait": "long"}' '{"wait": 1}' '{"chars": 3}' '{"chars": "", "colour": "red"}'; do
		req POST /v1/sandboxes/api1/sessions/wt/input -d "$b"
		assert_error 400 "$b"
	done
	req GET /v1/sandboxes/api1/sessions/wt -G --data-urlencode 'until=('
	assert_error 400
	req DELETE /v1/sandboxes/api1/sessions/wt
	[ "$code" = 204 ]
}

@test "sessions: one whose process ended answers once more with its output and status, then is gone" {
	local i
	start_session api1 '{"name": "short", "cmd": ["sh", "-c", "echo bye-$((3+4)); exit 7"]}'
	for i in $(seq 50); do
		req GET /v1/sandboxes/api1/sessions
		jq -e '.sessions[] | select(.name == "short") | .alive == false' <<<"$body" >/dev/null && break
		sleep 0.2
	done
	jqe '.sessions[] | select(.name == "short") | .alive == false and .exit == 7 and .unread > 0 and .pid == null'
	hear api1 short --data-urlencode wait=0
	said_line bye-7
	jqe '.alive == false and .exit == 7'
	# Read once: gone.
	req POST /v1/sandboxes/api1/sessions/short/input -d '{"chars": "x\n"}'
	assert_error 404
	req GET /v1/sandboxes/api1/sessions
	jqe 'all(.sessions[]; .name != "short")'
	# Its name may be taken again.
	start_session api1 '{"name": "short", "cmd": ["sh", "-c", "echo again; sleep 100"]}'
	jqe '.alive == true'
	hear api1 short --data-urlencode wait=5 --data-urlencode until=again
	said_line again
	req DELETE /v1/sandboxes/api1/sessions/short
	[ "$code" = 204 ]
}

@test "sessions: a full buffer drops the oldest output and says how much" {
	local prog
	prog='head -c 3000000 /dev/zero | tr "\0" a; echo; echo flood-end; sleep 1000'
	start_session api1 "$(jq -cn --arg p "$prog" '{name: "flood", cmd: ["sh", "-c", $p]}')"
	sleep 5
	req GET /v1/sandboxes/api1/sessions
	jqe '.sessions[] | select(.name == "flood") | .unread > 0 and .unread <= 1048576'
	hear api1 flood --data-urlencode wait=0
	jqe '.dropped > 0 and (.output | length) <= 1048576'
	jqe '.dropped + (.output | length) >= 3000000'
	jqe '.output | endswith("flood-end\n")'
	# The next answer counts from there.
	hear api1 flood --data-urlencode wait=0
	jqe '.dropped == 0'
	req DELETE /v1/sandboxes/api1/sessions/flood
	[ "$code" = 204 ]
}

@test "sessions: a session outlives a restart of the server, and what it wrote meanwhile is kept" {
	local old
	start_session api1 '{"name": "keep"}'
	say api1 keep $'y=7\n' 1
	say api1 keep $'sleep 2; echo during-$((y*6))\n' 0.3
	old=$(cat "$API_DIR/serve.pid")
	stop_server
	[ ! -e "/proc/$old" ]
	# The session writes while no server runs.
	sleep 2.5
	start_server
	req GET /v1/sandboxes/api1/sessions
	jqe '.sessions[] | select(.name == "keep") | .alive == true'
	hear api1 keep --data-urlencode wait=5 --data-urlencode $'until=^during-42\r?$'
	said_line during-42
	say api1 keep $'echo after-$((y+1))\n' 10 $'^after-8\r?$'
	said_line after-8
	req GET /v1/sandboxes/api1
	jqe '.state == "running"'
	req DELETE /v1/sandboxes/api1/sessions/keep
	[ "$code" = 204 ]
}

# procs_until N COUNTER ID REGEX: runs COUNTER (procs_in or cli_procs_in)
# until it says N, for up to ~10 s; prints its last count.
procs_until() {
	local want=$1 i n
	shift
	for i in $(seq 40); do
		n=$("$@")
		[ "$n" = "$want" ] && break
		sleep 0.25
	done
	echo "$n"
}

# cli_procs_in ID REGEX: procs_in through `brig sandbox exec`, for when no
# server answers.
cli_procs_in() {
	"$BRIG" --root "$SB_ROOT" sandbox exec "$1" sh -c \
		'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -cE "$0" || true' "$2"
}

@test "serve killed (SIGKILL) mid-exec: the command goes with it; a new server has every sandbox and session" {
	local old n curl_pid
	start_session api1 '{"name": "survivor"}'
	say api1 survivor $'z=5\n' 1
	# No exec timeout: only the server's end can end it.
	curl -s -N --max-time 120 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
		-d '{"cmd": ["sh", "-c", "sleep 1006 & sleep 1007"]}' \
		http://localhost/v1/sandboxes/api1/exec >/dev/null 2>&1 3>&- &
	curl_pid=$!
	n=$(procs_until 2 cli_procs_in api1 '^sleep 100[67] ')
	[ "$n" = 2 ] || fail "the exec did not start: $n processes"
	old=$(cat "$API_DIR/serve.pid")
	rm -f "$API_DIR/serve.pid"
	kill -9 "$old"
	n=$(procs_until 0 cli_procs_in api1 '^sleep 100[67] ')
	kill "$curl_pid" 2>/dev/null || true
	[ "$n" = 0 ] || fail "the command outlived its server: $n processes"

	# The next server finds everything: both sandboxes, running; the
	# session, alive and with its variable; exec works.
	start_server
	req GET /v1/sandboxes
	[ "$code" = 200 ] || fail "list: $code: $body"
	jqe '[.sandboxes[] | select(.id == "api1" or .id == "apiq") | .state] == ["running", "running"]'
	req GET /v1/sandboxes/api1/sessions
	jqe '.sessions[] | select(.name == "survivor") | .alive == true'
	say api1 survivor $'echo got-$((z+1))\n' 10 $'^got-6\r?$'
	said_line got-6
	exec_cmd api1 echo after
	[ "$(text "$out")" = after ] || fail "exec after the restart: $out"
	req DELETE /v1/sandboxes/api1/sessions/survivor
	[ "$code" = 204 ]
}

@test "files: PUT then GET gives the same bytes, owned by the sandbox's user; replace, missing parent, names to encode" {
	local sum
	head -c 1000000 /dev/urandom >"$BATS_TEST_TMPDIR/blob"
	sum=$(sha256sum <"$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)
	exec_cmd api1 mkdir -p /mnt/data/up/deep
	req PUT /v1/sandboxes/api1/files/up/deep/blob.bin --data-binary "@$BATS_TEST_TMPDIR/blob" \
		-H 'Content-Type: application/octet-stream'
	[ "$code" = 201 ] || fail "put: $code: $body"
	jqe '. == {"path": "/mnt/data/up/deep/blob.bin", "size": 1000000}'
	req GET /v1/sandboxes/api1/files/up/deep/blob.bin
	[ "$code" = 200 ]
	[[ "$(header content-type)" == application/octet-stream* ]]
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/body" | cut -d' ' -f1)" = "$sum" ]
	exec_cmd api1 sh -c 'sha256sum up/deep/blob.bin | cut -d" " -f1; stat -c "%u %g %a" up/deep/blob.bin'
	[ "$(text "$out")" = "$sum
1000 1000 644" ]
	# Replaced by the next PUT.
	req PUT /v1/sandboxes/api1/files/up/data.csv --data-binary $'a,b\n1,2\n'
	[ "$code" = 201 ]
	req PUT /v1/sandboxes/api1/files/up/data.csv --data-binary $'a,b\n3,4\n'
	jqe '.size == 8'
	req GET /v1/sandboxes/api1/files/up/data.csv
	[ "$body" = $'a,b\n3,4' ]
	# An empty file.
	req PUT /v1/sandboxes/api1/files/up/empty --data-binary ''
	[ "$code" = 201 ]
	jqe '.size == 0'
	# A name that needs percent-encoding.
	req PUT '/v1/sandboxes/api1/files/up/with%20space%3F.txt' --data-binary 'spaced'
	jqe '.path == "/mnt/data/up/with space?.txt"'
	exec_cmd api1 cat '/mnt/data/up/with space?.txt'
	[ "$out" = '"spaced"' ]
	req PUT /v1/sandboxes/api1/files/no/such/dir.txt --data-binary x
	assert_error 404
	req PUT /v1/sandboxes/api1/files/up --data-binary x
	assert_error 400
	req PUT /v1/sandboxes/api1/files/up/ --data-binary x
	assert_error 400
	req GET /v1/sandboxes/api1/files/up
	assert_error 400
	req GET /v1/sandboxes/api1/files/up/nothing-here
	assert_error 404
	exec_cmd api1 ln -sfn data.csv /mnt/data/up/link
	req GET /v1/sandboxes/api1/files/up/link
	assert_error 400
}

@test "files: a directory's listing: names sorted, types, sizes, mtimes" {
	local m
	exec_cmd api1 sh -c 'rm -rf /mnt/data/ls && mkdir -p /mnt/data/ls/sub && cd /mnt/data/ls && printf 12345 >five && ln -s five link &&
		python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")"'
	[ "$last" = '{"exit":0}' ] || fail "$events"
	req GET /v1/sandboxes/api1/files/ls/
	assert_json 200
	jqe '[.entries[].name] == ["five", "link", "sock", "sub"]'
	jqe '.entries[] | select(.name == "five") | .type == "file" and .size == 5'
	jqe '.entries[] | select(.name == "link") | .type == "symlink" and .size == 4'
	jqe '.entries[] | select(.name == "sock") | .type == "other"'
	jqe '.entries[] | select(.name == "sub") | .type == "dir"'
	jqe 'all(.entries[]; .mtime | test($re))' --arg re "$RFC3339"
	m=$(jq -r '.entries[] | select(.name == "five") | .mtime' <<<"$body")
	exec_cmd api1 stat -c %Y /mnt/data/ls/five
	[ "$(date -d "$m" +%s)" = "$(text "$out")" ]
	req GET /v1/sandboxes/api1/files/ls/sub/
	jqe '.entries == []'
	# The top, with or without its slash.
	req GET /v1/sandboxes/api1/files/
	jqe '[.entries[].name] | index("ls") != null'
	req GET /v1/sandboxes/api1/files
	jqe '[.entries[].name] | index("ls") != null'
	req GET /v1/sandboxes/api1/files/ls/five/
	assert_error 400
	req GET /v1/sandboxes/api1/files/ls/none/
	assert_error 404
}

@test "files: .., absolute paths and the sandbox's symlinks never reach a host file" {
	local p victim=$BATS_TEST_TMPDIR/victim top
	echo orig >"$victim"
	exec_cmd api1 sh -c 'cd /mnt/data && ln -sfn / rootlink && ln -sfn /etc/passwd pw && ln -sfn ../../../../etc up4 &&
		ln -sfn "$0" victimlink && ln -sfn "$1" victimdir' "$victim" "$BATS_TEST_TMPDIR"
	[ "$last" = '{"exit":0}' ]
	for p in '..%2F..%2F..%2F..%2Fetc%2Fpasswd' '../../../../etc/passwd' 'up/../../../etc/passwd' '%2Fetc%2Fpasswd' \
		'/etc/passwd' '%2E%2E/%2E%2E/etc/passwd' './../etc/passwd' 'rootlink/etc/passwd' 'pw' 'up4/passwd' \
		'rootlink/proc/self/environ' 'victimlink'; do
		req GET "/v1/sandboxes/api1/files/$p" --path-as-is
		[ "$code" = 400 ] || [ "$code" = 404 ] || fail "GET files/$p: $code: ${body:0:200}"
		assert_error "$code" "GET files/$p"
		refute cmp -s "$BATS_TEST_TMPDIR/body" /etc/passwd
	done
	# Listing through them: refused, or the workspace's own.
	req GET /v1/sandboxes/api1/files/
	top=$(jq -c '[.entries[].name]' <<<"$body")
	for p in 'rootlink/' 'up4/' '..%2F..%2F/' '%2F/'; do
		req GET "/v1/sandboxes/api1/files/$p" --path-as-is
		if [ "$code" = 200 ]; then
			[ "$(jq -c '[.entries[].name]' <<<"$body")" = "$top" ] || fail "GET files/$p listed: $body"
		else
			[ "$code" = 400 ] || [ "$code" = 404 ] || fail "GET files/$p: $code: $body"
		fi
	done
	# Writing through them.
	for p in "rootlink/tmp/evil-$$" "rootlink${BATS_TEST_TMPDIR}/evil-$$" "%2Ftmp%2Fevil-$$" "victimdir/evil-$$"; do
		req PUT "/v1/sandboxes/api1/files/$p" --path-as-is --data-binary pwned
		[ "$code" = 400 ] || [ "$code" = 404 ] || fail "PUT files/$p: $code: $body"
	done
	# `..` stays in the workspace; a link written over is replaced, not followed.
	for p in '..%2Fevil' '../evil' 'victimlink'; do
		req PUT "/v1/sandboxes/api1/files/$p" --path-as-is --data-binary pwned
		[ "$code" = 201 ] || [ "$code" = 400 ] || [ "$code" = 404 ] || fail "PUT files/$p: $code: $body"
	done
	[ "$(cat "$victim")" = orig ]
	exec_cmd api1 sh -c '[ ! -L victimlink ] || readlink victimlink'
	[ "$(text "$out")" = "" ] || [ "$(text "$out")" = "$victim" ] || fail "victimlink: $(text "$out")"
	[ ! -e "/tmp/evil-$$" ]
	[ ! -e "$BATS_TEST_TMPDIR/evil-$$" ]
	[ ! -e "$BRIG_SANDBOX_DIR/api1/evil" ]
	[ ! -e "$BRIG_SANDBOX_DIR/evil" ]
	# A NUL would cut the path short: refused, nothing written or read.
	req PUT "/v1/sandboxes/api1/files/nul%00evil" --data-binary x
	assert_error 400
	req GET "/v1/sandboxes/api1/files/nul%00evil"
	assert_error 400
	exec_cmd api1 sh -c 'ls /mnt/data | grep -c nul || true'
	[ "$(text "$out")" = 0 ]
	exec_cmd api1 rm -f /mnt/data/rootlink /mnt/data/pw /mnt/data/up4 /mnt/data/victimlink /mnt/data/victimdir /mnt/data/evil
}

@test "files: a body larger than the space left is 413 and leaves nothing; so is a JSON body over 16 MiB" {
	local before used
	head -c 20971520 /dev/zero >"$BATS_TEST_TMPDIR/big"
	req PUT /v1/sandboxes/apiq/files/keep.txt --data-binary keep
	[ "$code" = 201 ]
	req GET /v1/sandboxes/apiq/files/
	before=$(jq -c '[.entries[].name]' <<<"$body")
	req GET /v1/sandboxes/apiq
	used=$(jq .data.used <<<"$body")
	req PUT /v1/sandboxes/apiq/files/big.bin --data-binary "@$BATS_TEST_TMPDIR/big"
	assert_error 413
	# Without a length ahead: found out while writing.
	req PUT /v1/sandboxes/apiq/files/big2.bin -H 'Transfer-Encoding: chunked' --data-binary "@$BATS_TEST_TMPDIR/big"
	assert_error 413
	# A file it would have replaced is as it was.
	req PUT /v1/sandboxes/apiq/files/keep.txt --data-binary "@$BATS_TEST_TMPDIR/big"
	assert_error 413
	req GET /v1/sandboxes/apiq/files/keep.txt
	[ "$body" = keep ]
	req GET /v1/sandboxes/apiq/files/
	[ "$(jq -c '[.entries[].name]' <<<"$body")" = "$before" ]
	exec_cmd apiq sh -c 'ls -A /mnt/data'
	[ "$out" = '"keep.txt\n"' ]
	req GET /v1/sandboxes/apiq
	jqe '.data.used <= $u + 65536' --argjson u "$used"
	# What fits still goes in.
	head -c 1048576 /dev/urandom >"$BATS_TEST_TMPDIR/fits"
	req PUT /v1/sandboxes/apiq/files/fits.bin --data-binary "@$BATS_TEST_TMPDIR/fits"
	[ "$code" = 201 ]
	exec_cmd apiq rm -f /mnt/data/fits.bin
	# A JSON body over 16 MiB.
	python3 -c 'import json, sys; json.dump({"cmd": ["true"], "stdin": "x" * (17 << 20)}, open(sys.argv[1], "w"))' \
		"$BATS_TEST_TMPDIR/huge.json"
	req POST /v1/sandboxes/apiq/exec --data-binary "@$BATS_TEST_TMPDIR/huge.json"
	assert_error 413
}

@test "download: the host fetches an allowed URL as the sandbox's user; a refused host is 403, an HTTP error 502" {
	exec_cmd api1 mkdir -p /mnt/data/dl
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"dl/hello.txt\"}"
	assert_json 201
	jqe '. == {"path": "/mnt/data/dl/hello.txt", "size": 6}'
	exec_cmd api1 sh -c 'cat dl/hello.txt; stat -c "%u %g" dl/hello.txt'
	[ "$out" = '"hello\n1000 1000\n"' ]
	# /mnt/data/... names the same place; a directory gets the URL's name.
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"/mnt/data/dl/again.txt\"}"
	jqe '.path == "/mnt/data/dl/again.txt"'
	exec_cmd api1 mkdir /mnt/data/dl/sub
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"dl/sub\"}"
	[ "$code" = 201 ] || fail "download into a directory: $code: $body"
	jqe '. == {"path": "/mnt/data/dl/sub/hello.txt", "size": 6}'
	req POST /v1/sandboxes/api1/download -d '{"url": "http://example.com/x", "path": "dl/x"}'
	assert_error 403
	req POST /v1/sandboxes/api1/download -d '{"url": "http://169.254.169.254/latest/meta-data/", "path": "dl/x"}'
	assert_error 403
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/missing\", \"path\": \"dl/missing\"}"
	assert_error 502
	[[ "$body" == *404* ]] || fail "the 502 doesn't say the source's status: $body"
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"nodir/x\"}"
	assert_error 404
	req POST /v1/sandboxes/api1/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"../x\"}"
	assert_error 400
	local b
	for b in '{"url": "file:///etc/passwd", "path": "dl/p"}' '{"url": "ftp://example.com/x", "path": "dl/p"}' \
		'{"path": "dl/p"}' '{"url": "http://example.com/x"}' '{"url": 5, "path": "dl/p"}' \
		'{"url": "http://example.com/x", "path": "dl/p", "colour": "red"}' \
		"{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"/etc/x\"}" \
		"{\"url\": \"http://127.0.0.1:$WWW_PORT/hello.txt\", \"path\": \"dl/hello.txt/x\"}"; do
		req POST /v1/sandboxes/api1/download -d "$b"
		assert_error 400 "$b"
	done
	exec_cmd api1 ls -A /mnt/data/dl
	[ "$out" = '"again.txt\nhello.txt\nsub\n"' ]
	# Past the quota: 413, and nothing left.
	req POST /v1/sandboxes/apiq/download -d "{\"url\": \"http://127.0.0.1:$WWW_PORT/big.bin\", \"path\": \"big.bin\"}"
	assert_error 413
	req GET /v1/sandboxes/apiq/files/big.bin
	assert_error 404
	exec_cmd api1 rm -rf /mnt/data/dl
}

@test "lifetimes: a ttl removes a sandbox when it is due; activity puts off an idle timeout" {
	local i gone_t2="" t0
	req POST /v1/sandboxes -d '{"id": "apit2", "memory": "128M", "pids": 32, "data_size": "8M", "network": "none", "ttl": "6s"}'
	[ "$code" = 201 ] || fail "create apit2: $code: $body"
	jqe '.lifetime.ttl == 6 and .lifetime.expires_in >= 1 and .lifetime.expires_in <= 6 and .lifetime.idle_timeout == null and .lifetime.expires_for == "ttl"'
	req POST /v1/sandboxes -d '{"id": "apit3", "memory": "128M", "pids": 32, "data_size": "8M", "network": "none", "idle_timeout": "5s"}'
	[ "$code" = 201 ] || fail "create apit3: $code: $body"
	t0=$(now)
	jqe '.lifetime.idle_timeout == 5 and .lifetime.expires_in <= 5 and .lifetime.ttl == null'
	# apit3 is kept busy for 12 s: an exec every 2 s.
	for i in $(seq 6); do
		exec_cmd apit3 true
		[ "$last" = '{"exit":0}' ] || fail "apit3 was removed while in use: $events"
		req GET /v1/sandboxes/apit2
		[ "$code" = 404 ] && gone_t2=yes
		sleep 2
	done
	req GET /v1/sandboxes/apit3
	[ "$code" = 200 ] || fail "apit3 was removed while in use: $code"
	jqe '.lifetime.expires_in <= 5'
	# Then left alone, it goes.
	for i in $(seq 60); do
		req GET /v1/sandboxes/apit2
		[ "$code" = 404 ] && gone_t2=yes
		req GET /v1/sandboxes/apit3
		[ "$code" = 404 ] && [ -n "$gone_t2" ] && break
		sleep 1
	done
	[ -n "$gone_t2" ] || fail "apit2 outlived its ttl"
	req GET /v1/sandboxes/apit3
	assert_error 404
	took_more "$t0" 12
	for i in apit2 apit3; do
		[ ! -e "$BRIG_SANDBOX_DIR/$i" ] || fail "$i's dir is left"
		[ ! -e "$SB_ROOT/$i" ] || fail "$i's container is left"
	done
}

@test "fifty execs at once against ten sandboxes all succeed with their own output" {
	local k i t0 pids=() dir=$BATS_TEST_TMPDIR/many
	mkdir -p "$dir"
	# Ten sandboxes, created at once.
	for k in $(seq 0 9); do
		curl -sS --max-time 300 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
			-d "{\"id\": \"apic$k\", \"memory\": \"128M\", \"pids\": 64, \"data_size\": \"8M\", \"network\": \"none\"}" \
			-o "$dir/create.$k" -w '%{http_code}' http://localhost/v1/sandboxes >"$dir/code.$k" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	for k in $(seq 0 9); do
		[ "$(cat "$dir/code.$k")" = 201 ] || fail "create apic$k: $(cat "$dir/code.$k") $(cat "$dir/create.$k")"
		req PUT "/v1/sandboxes/apic$k/files/name" --data-binary "apic$k"
		[ "$code" = 201 ]
	done
	t0=$(now)
	pids=()
	for i in $(seq 0 49); do
		curl -sS -N --max-time 120 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" \
			-d "$(jq -cn --arg i "$i" '{cmd: ["sh", "-c", "sleep 2; echo \"$(cat name)-$1\"", "sh", $i]}')" \
			"http://localhost/v1/sandboxes/apic$((i % 10))/exec" >"$dir/out.$i" 2>&1 &
		pids+=($!)
	done
	# Meanwhile the server answers others at once.
	sleep 0.5
	local t1
	t1=$(now)
	req GET /v1/sandboxes/api1
	[ "$code" = 200 ]
	took_less "$t1" 5
	wait "${pids[@]}" || true
	# Serial, they would take 100 s.
	took_less "$t0" 70
	for i in $(seq 0 49); do
		[ "$(jq -cs '[.[] | .stdout // empty] | add' "$dir/out.$i")" = "\"apic$((i % 10))-$i\\n\"" ] ||
			fail "exec $i: $(cat "$dir/out.$i")"
		[ "$(tail -n 1 "$dir/out.$i" | jq -cS .)" = '{"exit":0}' ] || fail "exec $i: $(cat "$dir/out.$i")"
	done
	# Removed at once too.
	pids=()
	for k in $(seq 0 9); do
		curl -sS --max-time 300 --unix-socket "$API_SOCK" -H "Authorization: Bearer $API_TOKEN" -X DELETE \
			-o /dev/null -w '%{http_code}' "http://localhost/v1/sandboxes/apic$k" >"$dir/code.$k" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	for k in $(seq 0 9); do
		[ "$(cat "$dir/code.$k")" = 204 ] || fail "delete apic$k: $(cat "$dir/code.$k")"
		[ ! -e "$BRIG_SANDBOX_DIR/apic$k" ]
	done
	req GET /v1/sandboxes
	jqe 'all(.sandboxes[]; .id | test("^apic[0-9]$") | not)'
}

@test "brig_client.py: its calls, its errors and its command line" {
	export PYTHONPATH=$TOP/contrib PYTHONDONTWRITEBYTECODE=1 BRIG_API_ADDR=unix:$API_SOCK \
		BRIG_API_TOKEN_FILE=$API_DIR/token
	run python3 - <<-'EOF'
		import os
		from brig_client import Brig, BrigError

		b = Brig()
		out, err, code = b.run("api1", ["sh", "-c", "echo out; echo err >&2; exit 3"])
		assert (out, err, code) == ("out\n", "err\n", 3), (out, err, code)
		events = list(b.exec("api1", ["sh", "-c", "echo a; sleep 0.3; echo b"], env={"X": "1"}, cwd="/tmp"))
		assert events == [{"stdout": "a\n"}, {"stdout": "b\n"}, {"exit": 0}], events
		assert b.run("api1", ["sleep", "10"], timeout=1)[2] == 124
		assert b.run("api1", ["cat"], stdin="fed\n")[0] == "fed\n"
		data = os.urandom(300000)
		assert b.put_file("api1", "client.bin", data) == {"path": "/mnt/data/client.bin", "size": 300000}
		assert b.get_file("api1", "/mnt/data/client.bin") == data
		assert "client.bin" in [e["name"] for e in b.list_files("api1")]
		assert b.get("api1")["state"] == "running"
		assert "api1" in [s["id"] for s in b.list()]
		try:
		    b.get("nope")
		    raise SystemExit("get of a missing sandbox did not raise")
		except BrigError as e:
		    assert e.status == 404 and e.message, (e.status, e.message)
		try:
		    Brig(token="wrong").list()
		    raise SystemExit("a wrong token did not raise")
		except BrigError as e:
		    assert e.status == 401, e.status
		b.session_start("api1", "cl", ["python3", "-q", "-i"])
		b.session_input("api1", "cl", "x = 41\n", wait=2)
		r = b.session_input("api1", "cl", "print(x + 1)\n", wait=10, until=r"^42\r?$")
		assert "42" in r["output"].replace("\r", "").split("\n"), r
		assert r["alive"] is True and r["exit"] is None, r
		assert "cl" in [s["name"] for s in b.sessions("api1")]
		assert b.session_read("api1", "cl", wait=0)["output"] in ("", ">>> ")
		b.session_kill("api1", "cl")
		try:
		    b.session_read("api1", "cl")
		    raise SystemExit("a killed session can still be read")
		except BrigError as e:
		    assert e.status == 404, e.status
		b.run("api1", ["rm", "client.bin"])
		print("ok")
	EOF
	[ "$status" -eq 0 ] || fail "$output"
	[ "$output" = ok ]
	run python3 "$TOP/contrib/brig_client.py" exec api1 -- sh -c 'echo hi; exit 5'
	[ "$status" -eq 5 ]
	[ "$output" = hi ]
	run python3 "$TOP/contrib/brig_client.py" ls
	[ "$status" -eq 0 ]
	jq -e -s 'map(.id) | index("api1") != null' <<<"$output"
	run --separate-stderr python3 "$TOP/contrib/brig_client.py" get nope
	[ "$status" -eq 1 ]
	[[ "$stderr" == "brig_client: 404: "* ]] || fail "$stderr"
}

@test "README: the assistant's loop runs as written" {
	local code_file=$BATS_TEST_TMPDIR/loop.py
	awk '/^## Driving sandboxes from an assistant.s platform/ { on = 1 }
		on && /^```python$/ { inblock = 1; next }
		inblock && /^```$/ { exit }
		inblock { print }' "$TOP/README.md" >"$code_file"
	[ -s "$code_file" ] || fail "no python block in the README's section"
	cd "$BATS_TEST_TMPDIR"
	PYTHONPATH=$TOP/contrib PYTHONDONTWRITEBYTECODE=1 BRIG_API_ADDR=unix:$API_SOCK \
		BRIG_API_TOKEN_FILE=$API_DIR/token run python3 "$code_file"
	[ "$status" -eq 0 ] || fail "$output"
	grep -qx 42 <<<"$(tr -d '\r' <<<"$output")" || fail "no 42: $output"
	[[ "$output" == *"['chart.py', 'chart.svg', 'sales.csv']"* ]] || fail "$output"
	[[ "$(head -c 4 chart.svg)" == "<svg" ]]
	[ "$(grep -o '<rect' chart.svg | wc -l)" = 3 ]
	req GET /v1/sandboxes/demo
	assert_error 404
}
