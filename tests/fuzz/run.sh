#!/bin/bash
# Runs libFuzzer targets (built by `make fuzz`) for a bounded time each and
# prints one line per target. Exits non-zero when any target finds a crash,
# a leak, undefined behaviour or a timeout; the input that caused it is kept
# and named in the output.
#
# Usage: run.sh TARGET...      (e.g. tests/fuzz/fuzz_spec)
#   FUZZ_SECONDS   time per target (default 60)
#   FUZZ_JOBS      targets run at once (default 1)
#
# Each target starts from its seed corpus (tests/fuzz/corpus/NAME/, in the
# source tree, never written) and keeps what it learns in
# work/NAME/corpus next to the target binary, so later runs start further
# ahead. The dictionary is every identifier-like string literal of the
# parsers, so the JSON keys and enum names the code knows are tried.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
[ $# -gt 0 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

run_one() {
	local bin=$1 name work dict log rc
	name=$(basename "$bin")
	work=$(cd "$(dirname "$bin")" && pwd)/work/$name
	mkdir -p "$work/corpus"
	rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
	dict=$work/brig.dict
	# shellcheck disable=SC2016 # a sed script
	grep -ohE '"[A-Za-z_][A-Za-z0-9_.]{1,40}"' "$top"/libcontainer/spec/spec*.c "$top"/libcontainer/process/seccomp.c |
		sort -u | sed 's/"/\\"/g; s/.*/"&"/' >"$dict"
	log=$work/log
	# -detect_leaks is libFuzzer's default; a leak ends the run like a crash.
	ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0} \
		"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-dict="$dict" -artifact_prefix="$work/" -print_final_stats=1 \
		"$work/corpus" "$here/corpus/$name" >"$log" 2>&1
	rc=$?
	local runs cov
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
	if [ "$rc" = 0 ]; then
		printf 'fuzz %-16s ok    %8s runs in %ss, %s, corpus %s\n' "$name" "${runs:-?}" "$seconds" \
			"${cov:-cov: ?}" "$(find "$work/corpus" -type f | wc -l)"
	else
		printf 'fuzz %-16s FAIL  exit status %s; input: %s\n' "$name" "$rc" \
			"$(find "$work" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
				-o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | head -n 1)"
		grep -E 'ERROR: |runtime error:|SUMMARY:|^    #[0-9] ' "$log" | head -n 20 | sed 's/^/    | /'
		echo "    | full log: $log"
	fi
	return "$rc"
}

status=0
pids=()
for bin in "$@"; do
	[ -x "$bin" ] || { echo "run.sh: no fuzz target $bin (make fuzz)" >&2; exit 2; }
	if [ "$jobs" -le 1 ]; then
		run_one "$bin" || status=1
	else
		run_one "$bin" >"$bin.summary" &
		pids+=($!)
		if [ ${#pids[@]} -ge "$jobs" ]; then
			wait "${pids[0]}" || status=1
			pids=("${pids[@]:1}")
		fi
	fi
done
for p in "${pids[@]}"; do
	wait "$p" || status=1
done
if [ "$jobs" -gt 1 ]; then
	for bin in "$@"; do
		cat "$bin.summary" && rm -f "$bin.summary"
	done
fi
exit "$status"
