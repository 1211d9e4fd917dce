#!/bin/sh
# Runs the integration suite against $BRIG (default: the brig built at the top
# of the tree) and ends with one line "N passed, N failed, N skipped".
# `make check` runs it with BRIG and top_srcdir set.
#
#   tests/integration/run.sh                     # every *.bats file
#   tests/integration/run.sh run.bats kill.bats  # some of them
#   BRIG=/usr/sbin/runc tests/integration/run.sh # validate the tests on runc
#   BRIG_TEST_FILTER=REGEX tests/integration/run.sh cri.bats  # the tests it names
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
BRIG=${BRIG:-$top/brig}
export BRIG

die() {
	echo "run.sh: $*" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "the integration tests create containers and must run as root"
command -v bats >/dev/null 2>&1 || die "bats is not installed (apt-get install bats, or run scripts/install-deps.sh)"
command -v jq >/dev/null 2>&1 || die "jq is not installed (apt-get install jq)"
[ -x /bin/busybox ] || die "/bin/busybox is missing (apt-get install busybox-static)"
[ -x "$BRIG" ] || die "no brig binary at $BRIG (build it first, or set BRIG)"

if [ "$#" -eq 0 ]; then
	set -- "$here"/*.bats
else
	# Names relative to this directory are fine too.
	n=$#
	while [ "$n" -gt 0 ]; do
		f=$1
		shift
		[ -e "$f" ] || f=$here/$f
		set -- "$@" "$f"
		n=$((n - 1))
	done
fi

echo "# brig under test: $BRIG"
tap=$(mktemp "${TMPDIR:-/tmp}/brig-tap.XXXXXX") || die "mktemp failed"
trap 'rm -f "$tap"' EXIT

# Keep bats' status: a crash part-way must not read as success. Signals
# ignored here (a runner started under nohup ignores SIGHUP) would stay
# ignored in every container, where a shell can't trap them again, and the
# tests that send them would wait for ever: bats starts with the defaults.
# stdin is /dev/null: a closed one (as CI may hand over) would be the first
# fd a test's program opens, and script(1) would take its pty for stdin.
if [ -n "${BRIG_TEST_FILTER:-}" ]; then
	set -- --filter "$BRIG_TEST_FILTER" "$@"
fi
env --default-signal bats --tap --timing --verbose-run "$@" >"$tap" 2>&1 </dev/null
bats_status=$?
cat "$tap"

planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap" | head -1)
ok=$(grep -c '^ok ' "$tap")
skipped=$(grep -c '^ok .* # [Ss][Kk][Ii][Pp]' "$tap")
failed=$(grep -c '^not ok ' "$tap")
passed=$((ok - skipped))

# Tests that never reported (bats died, a test hung and was killed) failed.
reported=$((ok + failed))
if [ -n "$planned" ] && [ "$reported" -lt "$planned" ]; then
	failed=$((failed + planned - reported))
fi
if [ "$bats_status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	echo "# bats exited with status $bats_status"
	failed=1
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
