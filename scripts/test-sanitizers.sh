#!/bin/sh
# Builds brig with AddressSanitizer and UndefinedBehaviorSanitizer
# (./configure --enable-sanitizers) in a build directory of its own, and
# runs the unit tests and the host integration suite with it (`make check`
# without the VM part). Every sanitizer report fails the run, even one from
# a brig that was meant to fail: reports go to files, not to the stderr the
# tests read, and the run fails when any file appears.
#
#   scripts/test-sanitizers.sh        (as root: the integration suite needs it)
#
#   BRIG_SANITIZER_DIR   the build directory (default: build-sanitizers at
#                        the top of the tree); the sources are copied into
#                        it, so an in-tree build next to it does not matter.
#
# Ends with one line "sanitizers: N passed, N failed, N skipped, N reports".
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${BRIG_SANITIZER_DIR:-$top/build-sanitizers}
src=$dir/src
reports=$dir/reports

# automake refuses an out-of-tree build of a tree that is configured in
# place, so the build gets a copy of the sources (tracked and new files, not
# build products).
rm -rf "$src" "$reports"
mkdir -p "$src" "$reports"
if [ -d "$top/.git" ] || [ -f "$top/.git" ]; then
	git -C "$top" ls-files -z --cached --others --exclude-standard |
		(cd "$top" && xargs -0 tar -cf - --no-recursion) | tar -C "$src" -xf -
else
	(cd "$top" && tar -cf - --exclude=./build-sanitizers .) | tar -C "$src" -xf -
	[ -f "$src/Makefile" ] && make -C "$src" distclean >/dev/null
fi

cd "$src"
log=$dir/build.log
{
	./autogen.sh && ./configure --enable-werror --enable-sanitizers && make -j2
} >"$log" 2>&1 || {
	tail -n 30 "$log"
	echo "sanitizers: the build failed (see $log)"
	exit 1
}

# halt_on_error: the first report ends the process (ASan does by default;
# UBSan must be told). detect_leaks: LeakSanitizer runs when a brig process
# exits; its container processes leave through execve() or _exit(), which
# skip it. tests/lsan.supp explains each suppression.
ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=86:log_path=$reports/asan"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
# The host's integration files (the VM's boots run the plain build).
BRIG_CHECK_PARTS=host
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS BRIG_CHECK_PARTS

status=0
make check >"$dir/check.log" 2>&1 || status=$?

# Each test program's log ends with its count; add up the last lines.
count=$(find tests -name '*.log' ! -name test-suite.log | while read -r l; do
	grep -E '^[0-9]+ passed, [0-9]+ failed' "$l" | tail -n 1
done | awk '{ p += $1; f += $3; s += $5 } END { printf "%d passed, %d failed, %d skipped", p, f, s }')
n_reports=$(find "$reports" -type f | wc -l)
if [ "$n_reports" -gt 0 ]; then
	for r in "$reports"/*; do
		echo "==================== $r"
		head -n 40 "$r"
	done
	status=1
fi
if [ "$status" -ne 0 ]; then
	# Each failure with the diagnostic lines bats printed under it (the
	# output of its runs): the build directory does not outlive CI.
	find . -name test-suite.log | while read -r l; do
		# The first lines of a block say where the test failed; its last
		# lines hold the failing check's message (after the output of
		# the runs before it): both, and no more than 40 lines a block.
		awk 'function flush(  i, from) {
				from = n > 40 ? n - 36 : 4
				for (i = 1; i <= n && i <= 3; i++) print b[i]
				if (from > 4) print "#   ..."
				for (i = from; i <= n; i++) print b[i]
				n = 0
			}
			/^(not ok|FAIL)/ { flush(); print; inb = 1; next }
			/^# / && inb { b[++n] = $0; next }
			{ if (inb) flush(); inb = 0 }
			END { flush() }' "$l" | head -n 200
	done
	echo "(logs: $dir/check.log and the test-suite.log files under $src)"
fi
echo "sanitizers: $count, $n_reports reports"
exit "$status"
