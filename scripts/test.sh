#!/bin/sh
# Builds brig with warnings as errors and runs every test as root: the unit
# tests, the bats integration suite (the test VM's boots with this build,
# the host's files with the sanitizer build), the conformance suite and the
# fuzz targets.
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
./autogen.sh
./configure --enable-werror
make -j"$(nproc)"

status=0
# The house rules (scripts/check-house.sh): clang-format, layers, file and
# function sizes, man pages installed, the product kept out of
# libcontainer/. Findings fail the build, after every test has run; all of
# them are in tests/house.txt, all but the format ones are shown here.
scripts/check-house.sh >tests/house.txt 2>&1 || status=$?
grep -v ': format: ' tests/house.txt || true
# The sandbox's Debian 12 trees (rootfs/README.md), which the sandbox tests
# use: incremental, so only a fresh machine pays for debootstrap (the small
# tree ~1 min; the full toolset ~3 min and 2.5 GB).
make rootfs
make rootfs PROFILE=full

# The unit tests, the test VM's boots and the runs with containerd's next
# releases; the host's integration files run once, in the sanitizer build
# below (tests/check-integration.sh, BRIG_CHECK_PARTS), which is how CI fits
# its time: each of those runs takes a quarter of an hour.
BRIG_CHECK_PARTS="vm containerd" make check || status=$?
# The OCI runtime-tools validation suite (tests/conformance/): failures
# not explained in its KNOWN.md fail the build.
# Its failures that KNOWN.md explains don't fail the build, so its count is
# said in words of its own and kept out of the total below.
tests/conformance/run.sh ./brig >tests/conformance/conformance.txt 2>&1 || status=$?
grep -v '^PASS ' tests/conformance/conformance.txt |
	sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/conformance: \1 ok, \2 not ok (see KNOWN above), \3 skipped/'
# Each libFuzzer target for FUZZ_SECONDS (tests/fuzz/), FUZZ_JOBS of them at
# once (a core each), then the unit tests
# and host integration suite built with ASan and UBSan: any crash, leak or
# sanitizer report fails the build.
{ make fuzz >tests/fuzz/fuzz.txt 2>&1 &&
	FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}" make -s fuzz-run FUZZ_SECONDS="${FUZZ_SECONDS:-60}" >>tests/fuzz/fuzz.txt 2>&1; } || status=$?
grep -E '^fuzz |^    \|' tests/fuzz/fuzz.txt || tail -n 20 tests/fuzz/fuzz.txt
scripts/test-sanitizers.sh >tests/sanitizers.txt 2>&1 || status=$?
grep -v '^sanitizers: ' tests/sanitizers.txt | tail -n 120
grep '^sanitizers: ' tests/sanitizers.txt || echo "sanitizers: no result"
grep '^house: ' tests/house.txt || echo "house: no result"
if [ "$status" -ne 0 ]; then
	# automake keeps the details of failing tests in test-suite.log files.
	find . -name test-suite.log -not -path './.git/*' | while read -r log; do
		echo "==================== $log"
		cat "$log"
	done
fi
# Each test program's log holds its count (the last such line); add them up.
find tests build-sanitizers/src/tests -name '*.log' ! -name test-suite.log 2>/dev/null | while read -r log; do
	grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1
done |
	awk '{ p += $1; f += $3; s += $5 } END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }'
exit "$status"
