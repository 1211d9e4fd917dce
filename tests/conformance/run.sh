#!/bin/bash
# Runs the OCI runtime-tools validation programs against a runtime and
# prints per-program results, then one line "N passed, N failed, N skipped".
# Exits non-zero when a failure is not listed in KNOWN.md.
#
# Usage: run.sh [options] [RUNTIME] [PROGRAM...]
#   RUNTIME            the runtime binary (default: brig at the top of the tree)
#   PROGRAM            run only these validation programs (default: all)
#   --cache DIR        build cache (default $BRIG_CONFORMANCE_CACHE or
#                      /var/cache/brig-conformance)
#   --timeout SECS     per-program time limit (default 120)
#   --results DIR      keep each program's TAP and stderr here
#                      (default CACHE/results, emptied first)
#   --known FILE       list of known failures (default KNOWN.md next to this)
#   --no-build         use the programs already in the cache
#   -v, --verbose      print every failing test's description, known or not
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${BRIG_CONFORMANCE_CACHE:-/var/cache/brig-conformance}
timeout_secs=120
results=
known=$here/KNOWN.md
build=1
verbose=0
runtime=
programs=()

while [ $# -gt 0 ]; do
	case $1 in
	--cache) cache=$2; shift 2 ;;
	--timeout) timeout_secs=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--known) known=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-v | --verbose) verbose=1; shift ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*)
		if [ -z "$runtime" ] && [ -x "$1" ] && [ ! -d "$1" ]; then
			runtime=$1
		else
			programs+=("$1")
		fi
		shift ;;
	esac
done

runtime=${runtime:-$top/brig}
[ -x "$runtime" ] || { echo "run.sh: no runtime at $runtime (build brig first)" >&2; exit 2; }
runtime=$(cd "$(dirname "$runtime")" && pwd)/$(basename "$runtime")
[ "$(id -u)" = 0 ] || { echo "run.sh: the validation programs need root" >&2; exit 2; }

if [ "$build" = 1 ]; then
	"$here/build.sh" "$cache" || exit 2
fi
bin=$cache/bin
[ -x "$bin/runtimetest" ] || { echo "run.sh: nothing built in $bin" >&2; exit 2; }
if [ ${#programs[@]} = 0 ]; then
	for p in "$bin"/*; do
		case $(basename "$p") in runtimetest | rootfs-* | .*) continue ;; esac
		[ -x "$p" ] && programs+=("$(basename "$p")")
	done
fi

# A runtime that set up a rootfs in the host's mount namespace can leave the
# bundle's /proc, /sys and /dev mounted; detach them, deepest first, so
# removing the bundle never reaches into the host's /sys.
remove_tree() {
	local mnt
	awk -v dir="$1/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r mnt; do
			umount -l "$mnt" 2>/dev/null
		done
	rm -rf --one-file-system "$1" 2>/dev/null
}

results=${results:-$cache/results}
remove_tree "$results"
mkdir -p "$results/tmp" "$results/state"

# The runtime runs with a private state directory, so containers a program
# leaves behind can be found and removed without touching anyone else's.
wrapper=$results/runtime
printf '#!/bin/sh\nexec %q --root %q "$@"\n' "$runtime" "$results/state" >"$wrapper"
chmod +x "$wrapper"

cleanup_containers() {
	local id
	for id in $("$wrapper" list -q 2>/dev/null); do
		"$wrapper" delete --force "$id" >/dev/null 2>&1
	done
	remove_tree "$results/tmp"
	mkdir -p "$results/tmp"
}

# Known failures: table rows "| `program` | `test pattern` | reason |" where
# the pattern is a shell glob on the failing test's description.
known_patterns=()
# shellcheck disable=SC2016 # the backquotes are Markdown, not shell
if [ -f "$known" ]; then
	while IFS=$'\t' read -r prog pat; do
		known_patterns+=("$prog"$'\t'"$pat")
	done < <(sed -n 's/^| *`\([^`]*\)` *| *`\([^`]*\)` *|.*/\1\t\2/p' "$known")
fi

is_known() {
	local prog=$1 desc=$2 entry
	for entry in "${known_patterns[@]}"; do
		# shellcheck disable=SC2053 # the pattern is a glob on purpose
		[[ $prog == ${entry%%$'\t'*} && $desc == ${entry#*$'\t'} ]] && return 0
	done
	return 1
}

# Reads one program's TAP; prints "P F S" and then one failing description
# a line. Only top-level lines count: the TAP runtimetest prints inside the
# container often comes back quoted in an indented YAML block.
parse_tap() {
	awk '
		# A YAML block belongs to the test line just before it (or, as the
		# suite writes some, just after it); an "error" in a block next to
		# no test line is a failure reported nowhere else.
		/^  ---$/ { inyaml = 1; blockerr = 0; attached = prevtest; next }
		/^  \.\.\.$/ { inyaml = 0; if (blockerr && !attached) pending = 1; prevtest = 0; next }
		inyaml { if ($0 ~ /^  error:/) blockerr = 1; next }
		{ istest = ($0 ~ /^(not )?ok/); if (pending && !istest) yamlerr = 1; pending = 0; prevtest = istest }
		/^not ok/ {
			d = $0
			sub(/^not ok [0-9]* *(- )?/, "", d)
			if (d ~ /# [Tt][Oo][Dd][Oo]/) { s++; next }
			f++; fails[f] = d; next
		}
		/^ok/ { if ($0 ~ /# [Ss][Kk][Ii][Pp]/) s++; else p++; next }
		END {
			if (pending) yamlerr = 1
			printf "%d %d %d %d\n", p, f, s, yamlerr
			for (i = 1; i <= f; i++) print fails[i]
		}
	' "$1"
}

total_pass=0 total_fail=0 total_skip=0 unknown=0
start_all=$(date +%s)
cd "$bin" || exit 2
for prog in "${programs[@]}"; do
	[ -x "$bin/$prog" ] || { echo "run.sh: no program $prog" >&2; exit 2; }
	out=$results/$prog.tap err=$results/$prog.err
	t0=$(date +%s)
	TMPDIR=$results/tmp RUNTIME=$wrapper timeout -k 10 "$timeout_secs" "./$prog" >"$out" 2>"$err"
	rc=$?
	secs=$(($(date +%s) - t0))
	cleanup_containers

	mapfile -t lines < <(parse_tap "$out")
	read -r p f s yamlerr <<<"${lines[0]}"
	fails=("${lines[@]:1}")
	# A program that fails without a "not ok" still counts as one failure.
	if [ "$f" = 0 ]; then
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			fails=("timed out after ${timeout_secs}s"); f=1
		elif [ "$rc" != 0 ]; then
			fails=("exit status $rc"); f=1
		elif [ "$yamlerr" = 1 ]; then
			fails=("error in a YAML block"); f=1
		fi
	fi

	new=()
	for d in "${fails[@]}"; do
		is_known "$prog" "$d" || new+=("$d")
	done
	if [ "$f" = 0 ]; then
		verdict=PASS
	elif [ ${#new[@]} = 0 ]; then
		verdict=KNOWN
	else
		verdict=FAIL
	fi
	printf '%-6s %-34s %4d ok %4d not ok %4d skip  %3ds\n' "$verdict" "$prog" "$p" "$f" "$s" "$secs"
	for d in "${fails[@]}"; do
		if is_known "$prog" "$d"; then
			[ "$verbose" = 1 ] && echo "         known: $d"
		else
			echo "         new:   $d"
		fi
	done
	if [ ${#new[@]} -gt 0 ] && [ "$f" = 1 ] && [ "$rc" != 0 ] && [ -s "$err" ]; then
		tail -n 5 "$err" | sed 's/^/         | /'
	fi

	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + s))
	unknown=$((unknown + ${#new[@]}))
done

echo "runtime $runtime; TAP and stderr in $results; $(($(date +%s) - start_all))s"
echo "$unknown failures not in $(basename "$known")"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$unknown" = 0 ]
