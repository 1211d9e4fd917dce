#!/usr/bin/env bash
# The packages-only network's cost, side by side in one run (make bench,
# on the host: the test VM has no network):
#   - download throughput of a large file of the host's own Debian mirror
#     (the first http:// source of apt's), by Python's urllib in a sandbox
#     through brig-egress, against the same program on the host straight
#     to the mirror; alternating, BENCH_EGRESS_RUNS (5) each;
#   - the time to a usable tunnel: a TCP connect plus CONNECT to npm's
#     registry through the proxy, against a TCP connect from the host;
#     BENCH_EGRESS_CONNECTS (50) each.
# Medians, the ratio, and JSON in RESULT.json.
#
#   tests/bench/egress.sh [RESULT.json]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
RUNS=${BENCH_EGRESS_RUNS:-5}
CONNECTS=${BENCH_EGRESS_CONNECTS:-50}
result=${1:-egress-result.json}
tree=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

die() {
	echo "bench egress: $*" >&2
	exit 1
}
[ -d "$tree/usr/bin" ] || die "no sandbox tree at $tree (make rootfs)"

mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
	[ -e "$f" ] || continue
	mirror=$(awk '/^URIs:/ && $2 ~ /^http:/ { print $2; exit }' "$f")
	suite=$(awk '/^Suites:/ { print $2; exit }' "$f")
	[ -n "$mirror" ] && break
done
if [ -z "$mirror" ]; then
	read -r mirror suite < <(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^http:/) { print $i, $(i + 1); exit } }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null)
fi
[ -n "$mirror" ] || die "no http:// source in apt's sources"
# The largest common file of a suite: the index of every package's files.
url="$mirror/dists/$suite/main/Contents-amd64.gz"
registry=$(npm config get registry 2>/dev/null || true)
reg_host=$(echo "$registry" | sed -E 's|^[a-z]+://([^/:]+).*|\1|')

work=$(mktemp -d "${TMPDIR:-/tmp}/brig-bench-egress.XXXXXX")
chmod 0711 "$work"
export BRIG_SANDBOX_DIR=$work/sandboxes BRIG_EGRESS_DIR=$work/egress
export BRIG_EGRESS_LOG=$work/egress.log BRIG_EGRESS_CONFIG=$work/none.conf
[ -n "${BRIG_EGRESS:-}" ] || export BRIG_EGRESS=$(dirname "$BRIG")/brig-egress
[ -n "${BRIG_INIT:-}" ] || export BRIG_INIT=$(dirname "$BRIG")/brig-init
root=$work/state
cleanup() {
	"$BRIG" --root "$root" sandbox rm bench-egress >/dev/null 2>&1 || true
	for pid in $(sed -n 's/.* started pid=\([0-9]*\) .*/\1/p' "$BRIG_EGRESS_LOG" 2>/dev/null); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = brig-egress ] && kill "$pid"
	done
	rm -rf "$work"
}
trap cleanup EXIT

"$BRIG" --root "$root" sandbox create --network packages --rootfs "$tree" bench-egress >/dev/null ||
	die "cannot create a sandbox on the packages network"

# download URL: "SECONDS BYTES" of one whole download by urllib.
download='
import sys, time, urllib.request
t = time.monotonic(); n = 0
with urllib.request.urlopen(sys.argv[1], timeout=120) as r:
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        n += len(b)
print(time.monotonic() - t, n)'
# connects HOST N MODE: N times a usable connection, median seconds: MODE
# "proxy" a connect to the proxy and a CONNECT through it, "direct" a TCP
# connect to HOST:443.
connects='
import socket, statistics, sys, time
host, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = []
for _ in range(n):
    t = time.monotonic()
    if mode == "proxy":
        s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
        s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host, host)).encode())
        if not s.recv(100).startswith(b"HTTP/1.1 200"):
            sys.exit("CONNECT refused")
    else:
        s = socket.create_connection((host, 443), timeout=30)
    times.append(time.monotonic() - t)
    s.close()
print(statistics.median(times))'

in_sandbox() {
	"$BRIG" --root "$root" sandbox exec bench-egress -- "$@"
}

: >"$work/direct" >"$work/proxy"
for ((i = 0; i < RUNS; i++)); do
	if ((i % 2)); then order="proxy direct"; else order="direct proxy"; fi
	for m in $order; do
		if [ "$m" = direct ]; then
			python3 -c "$download" "$url" >>"$work/direct"
		else
			in_sandbox python3 -c "$download" "$url" >>"$work/proxy"
		fi
	done
done

median_rate() { # FILE: median MB/s
	awk '{ print $2 / $1 / 1e6 }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
direct_rate=$(median_rate "$work/direct")
proxy_rate=$(median_rate "$work/proxy")
bytes=$(awk 'NR == 1 { print $2 }' "$work/direct")

connect_direct=null connect_proxy=null
if [ -n "$reg_host" ]; then
	connect_direct=$(python3 -c "$connects" "$reg_host" "$CONNECTS" direct)
	connect_proxy=$(in_sandbox python3 -c "$connects" "$reg_host" "$CONNECTS" proxy)
fi

jq -n --arg url "$url" --argjson bytes "$bytes" --argjson runs "$RUNS" \
	--argjson direct "$(printf %.1f "$direct_rate")" --argjson proxy "$(printf %.1f "$proxy_rate")" \
	--argjson cd "$connect_direct" --argjson cp "$connect_proxy" --argjson n "$CONNECTS" '
	{download: {url: $url, bytes: $bytes, runs: $runs, direct_MBps: $direct, proxy_MBps: $proxy,
	            "proxy/direct": ($proxy / $direct * 1000 | round / 1000)},
	 connect: {n: $n, direct_ms: (if $cd then $cd * 1e6 | round / 1000 else null end),
	           proxy_ms: (if $cp then $cp * 1e6 | round / 1000 else null end),
	           added_ms: (if $cd and $cp then ($cp - $cd) * 1e6 | round / 1000 else null end)}}' >"$result"
jq -r '"# egress: \(.download.bytes) bytes of \(.download.url), median of \(.download.runs)",
	"download  direct \(.download.direct_MBps) MB/s  through the proxy \(.download.proxy_MBps) MB/s  proxy/direct \(.download["proxy/direct"])",
	"tunnel    direct connect \(.connect.direct_ms) ms  connect + CONNECT \(.connect.proxy_ms) ms  added \(.connect.added_ms) ms (median of \(.connect.n))"' "$result"
echo "# written to $result"
