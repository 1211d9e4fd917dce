#!/usr/bin/env bash
# The sandbox API's cost, side by side in one run (make bench, on the host):
#   - exec of `true` into one running sandbox through `brig serve`
#     (POST /v1/sandboxes/ID/exec over its unix socket, the stream read
#     to its exit event) against `brig sandbox exec`, alternating,
#     BENCH_API_EXECS (100) each: medians, p90s and the added latency;
#   - a session's input round trip: `echo N` typed into a bash session
#     until its output holds N (POST .../sessions/NAME/input with an
#     `until`), against `brig sandbox session input`, BENCH_API_INPUTS
#     (100) each.
# JSON in RESULT.json.
#
#   tests/bench/api.sh [RESULT.json]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
EXECS=${BENCH_API_EXECS:-100}
INPUTS=${BENCH_API_INPUTS:-100}
result=${1:-api-result.json}
tree=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

die() {
	echo "bench api: $*" >&2
	exit 1
}
[ -d "$tree/usr/bin" ] || die "no sandbox tree at $tree (make rootfs)"

work=$(mktemp -d "${TMPDIR:-/tmp}/brig-bench-api.XXXXXX")
chmod 0711 "$work"
export BRIG_SANDBOX_DIR=$work/sandboxes
[ -n "${BRIG_INIT:-}" ] || export BRIG_INIT=$(dirname "$BRIG")/brig-init
[ -n "${BRIG_API:-}" ] || export BRIG_API=$(dirname "$BRIG")/brig-api
root=$work/state sock=$work/api.sock
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	"$BRIG" --root "$root" sandbox rm bench-api >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

"$BRIG" --root "$root" sandbox create --network none --rootfs "$tree" bench-api >/dev/null ||
	die "cannot create a sandbox"
"$BRIG" --root "$root" serve --listen "unix:$sock" 2>"$work/serve.log" &
server=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || die "brig serve did not start: $(cat "$work/serve.log")"

# The client side of both, in one Python process per side so that its own
# start is not counted: N timed calls, the seconds of each on a line.
timer='
import http.client, json, socket, subprocess, sys, time
mode, n, sock, brig, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)
def api(method, path, body):
    c = Unix("brig")
    c.request(method, path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status >= 300:
        sys.exit("%s %s: %d %s" % (method, path, r.status, data))
    return data
for i in range(n):
    t = time.monotonic()
    if mode == "api-exec":
        out = api("POST", "/v1/sandboxes/bench-api/exec", {"cmd": ["true"]})
        assert out.endswith(b"{\"exit\":0}\n"), out
    elif mode == "cli-exec":
        subprocess.run([brig, "--root", root, "sandbox", "exec", "bench-api", "true"], check=True)
    elif mode == "api-input":
        out = json.loads(api("POST", "/v1/sandboxes/bench-api/sessions/b/input",
                             {"chars": "echo %d$((1+1))\n" % i, "until": "%d2" % i, "wait": 10}))
        assert ("%d2" % i) in out["output"], out
    else:
        out = subprocess.run([brig, "--root", root, "sandbox", "session", "input", "--until",
                              "%d2" % i, "--wait", "10s", "bench-api", "b", "echo %d$((1+1))\\n" % i],
                             check=True, capture_output=True).stdout
        assert ("%d2" % i).encode() in out, out
    print(time.monotonic() - t)'

run() { python3 -c "$timer" "$1" "$2" "$sock" "$BRIG" "$root" >>"$work/$1"; }

: >"$work/api-exec" >"$work/cli-exec" >"$work/api-input" >"$work/cli-input"
"$BRIG" --root "$root" sandbox session start bench-api b >/dev/null || die "session start failed"
"$BRIG" --root "$root" sandbox session input --wait 1s bench-api b 'PS1=\n' >/dev/null
# Alternating in rounds of ten, so that a drift of the host lands on both.
for ((i = 0; i < EXECS; i += 10)); do
	run api-exec 10
	run cli-exec 10
done
for ((i = 0; i < INPUTS; i += 10)); do
	run api-input 10
	run cli-input 10
done

stats() { # FILE: median p90 in ms
	sort -n "$1" | awk '{ v[NR] = $1 * 1000 } END { printf "%.3f %.3f\n", v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)] }'
}
read -r ae_med ae_p90 < <(stats "$work/api-exec")
read -r ce_med ce_p90 < <(stats "$work/cli-exec")
read -r ai_med ai_p90 < <(stats "$work/api-input")
read -r ci_med ci_p90 < <(stats "$work/cli-input")

jq -n --argjson n "$EXECS" --argjson m "$INPUTS" \
	--argjson aem "$ae_med" --argjson aep "$ae_p90" --argjson cem "$ce_med" --argjson cep "$ce_p90" \
	--argjson aim "$ai_med" --argjson aip "$ai_p90" --argjson cim "$ci_med" --argjson cip "$ci_p90" '
	{exec: {n: $n, api_ms: {median: $aem, p90: $aep}, cli_ms: {median: $cem, p90: $cep},
	        added_ms: (($aem - $cem) * 1000 | round / 1000), "api/cli": ($aem / $cem * 1000 | round / 1000)},
	 session_input: {n: $m, api_ms: {median: $aim, p90: $aip}, cli_ms: {median: $cim, p90: $cip},
	        "api/cli": ($aim / $cim * 1000 | round / 1000)}}' >"$result"
jq -r '"# api: medians (p90) of \(.exec.n) execs of true and \(.session_input.n) session round trips",
	"exec     brig serve \(.exec.api_ms.median) ms (\(.exec.api_ms.p90))  brig sandbox exec \(.exec.cli_ms.median) ms (\(.exec.cli_ms.p90))  added \(.exec.added_ms) ms  api/cli \(.exec["api/cli"])",
	"session  brig serve \(.session_input.api_ms.median) ms (\(.session_input.api_ms.p90))  brig sandbox session input \(.session_input.cli_ms.median) ms (\(.session_input.cli_ms.p90))  api/cli \(.session_input["api/cli"])"' "$result"
echo "# written to $result"
