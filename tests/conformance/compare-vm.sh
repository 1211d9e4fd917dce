#!/bin/bash
# Runs validation programs against brig, runc and crun in one boot of the
# cgroup v2 test VM (tests/vm/run.sh) and writes a Markdown table of every
# test that fails for at least one of them, side by side. This is the
# evidence behind KNOWN.md: a failure is the suite's problem when runc and
# crun fail the same assertion on the same machine.
#
# Usage: compare-vm.sh [options] [PROGRAM...]
#   PROGRAM         validation programs to run (default: those KNOWN.md names)
#   --all           every validation program
#   --out FILE      write the table here (default: stdout)
#   --timeout SECS  per-program time limit, passed to run.sh (default 300)
#
# Each program's TAP and stderr per runtime are left in
# tests/conformance/vm-results/. Needs root, a built ./brig, and the runtimes /usr/sbin/runc and
# /usr/bin/crun (Debian's runc and crun; installed when missing). The
# validation programs are built on the host first (run.sh's cache), so the
# VM only runs them.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${BRIG_CONFORMANCE_CACHE:-/var/cache/brig-conformance}
runtimes=("brig=$top/brig" "runc=/usr/sbin/runc" "crun=/usr/bin/crun")

# --- inside the VM ----------------------------------------------------------
# Runs every runtime on the programs and leaves run.sh's output and the TAP
# files in $1 (a directory the host shares). The table is made on the host:
# processes in the VM are slow.
in_vm() {
	local out=$1 timeout_secs=$2 name bin
	shift 2
	mkdir -p /tmp/compare
	for entry in "${runtimes[@]}"; do
		name=${entry%%=*} bin=${entry#*=}
		echo "compare-vm: $name ($bin)" >&2
		"$here/run.sh" --no-build --known /dev/null --timeout "$timeout_secs" \
			--results "/tmp/compare/$name" "$bin" "$@" >"/tmp/compare/$name.out" 2>&1
		tail -n 1 "/tmp/compare/$name.out" >&2
		"$bin" --version | head -n 1 >"/tmp/compare/$name.version"
		mkdir -p "$out/$name"
		cp "/tmp/compare/$name.out" "/tmp/compare/$name.version" "$out/"
		cp /tmp/compare/"$name"/*.tap /tmp/compare/"$name"/*.err "$out/$name/"
	done
	echo "$(uname -sr), cgroup2 only ($(cat /sys/fs/cgroup/cgroup.subtree_control))" >"$out/machine"
}

# Prints the Markdown table from the results in $1.
table() {
	local work=$1 name p
	shift
	echo "Machine: $(cat "$work/machine")."
	echo
	echo "| runtime | version | passed, failed, skipped |"
	echo "|---|---|---|"
	for entry in "${runtimes[@]}"; do
		name=${entry%%=*}
		printf '| %s | %s | %s |\n' "$name" "$(cat "$work/$name.version")" \
			"$(tail -n 1 "$work/$name.out")"
	done
	echo
	echo "Cells: **fail** the runtime fails the test; ok it passes; — the"
	echo "program never reported it (it stopped earlier, or failed in another way)."
	echo
	echo "| program | test | brig | runc | crun |"
	echo "|---|---|---|---|---|"
	for p in "$@"; do
		table_rows "$work" "$p"
	done
	echo
	echo "## Programs that failed without a \`not ok\`"
	echo
	echo "The last line each program wrote to stderr (its own error, usually the"
	echo "runtime's message)."
	echo
	echo "| program | runtime | failure | last line of stderr |"
	echo "|---|---|---|---|"
	for p in "$@"; do
		for entry in "${runtimes[@]}"; do
			name=${entry%%=*}
			failures "$work/$name.out" "$p" | grep -E '^(exit status|timed out|error in a YAML)' |
				while read -r what; do
					# shellcheck disable=SC2016 # Markdown backquotes
					printf '| `%s` | %s | %s | %s |\n' "$p" "$name" "$what" \
						"$(last_error "$work/$name/$p.err")"
				done
		done
	done
}

# The failing test descriptions of one program in a run.sh output, one a
# line, each once.
failures() {
	awk -v prog="$2" '
		/^(PASS|KNOWN|FAIL) / { cur = $2; next }
		cur == prog && /^ +(new|known): / { sub(/^ +(new|known): +/, ""); if (!seen[$0]++) print }
	' "$1"
}

# Whether a program's TAP has a top-level "ok" line for a description.
passed() {
	awk -v d="$2" '
		/^ok / { s = $0; sub(/^ok [0-9]* *(- )?/, "", s); if (s == d) found = 1 }
		END { exit !found }
	' "$1" 2>/dev/null
}

# One program's line in a run.sh output: PASS when it had no failure.
program_passed() {
	grep -qE "^PASS +$2 " "$1"
}

# The last non-blank line of a stderr file, fit for a table cell.
last_error() {
	grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1 | cut -c1-200 | sed 's/|/\\|/g; s/`/'"'"'/g'
}

table_rows() {
	local work=$1 prog=$2 desc name cell row
	local -A seen=()
	for entry in "${runtimes[@]}"; do
		name=${entry%%=*}
		while IFS= read -r desc; do
			[ -n "${seen[$desc]:-}" ] && continue
			seen[$desc]=1
			row="| \`$prog\` | $(printf '%s' "$desc" | sed 's/|/\\|/g') |"
			for e2 in "${runtimes[@]}"; do
				local n2=${e2%%=*}
				if failures "$work/$n2.out" "$prog" | grep -qxF -- "$desc"; then
					cell="**fail**"
				elif passed "$work/$n2/$prog.tap" "$desc" || program_passed "$work/$n2.out" "$prog"; then
					cell=ok
				else
					cell="—"
				fi
				row="$row $cell |"
			done
			echo "$row"
		done < <(failures "$work/$name.out" "$prog")
	done
}

# --- on the host ------------------------------------------------------------
if [ "${1:-}" = --in-vm ]; then
	shift
	in_vm "$@"
	exit
fi

args=$*
out=
all=0
timeout_secs=300
programs=()
while [ $# -gt 0 ]; do
	case $1 in
	--all) all=1; shift ;;
	--out) out=$2; shift 2 ;;
	--timeout) timeout_secs=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "compare-vm.sh: unknown option $1" >&2; exit 2 ;;
	*) programs+=("$1"); shift ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "compare-vm.sh: needs root (the VM and the programs)" >&2; exit 2; }
[ -x "$top/brig" ] || { echo "compare-vm.sh: no $top/brig (build brig first)" >&2; exit 2; }
for pkg in runc crun; do
	if [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" != installed ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg" >&2 ||
			{ echo "compare-vm.sh: could not install $pkg" >&2; exit 2; }
	fi
done
"$here/build.sh" "$cache" >&2 || exit 2

if [ ${#programs[@]} = 0 ]; then
	if [ "$all" = 1 ]; then
		for p in "$cache"/bin/*; do
			case $(basename "$p") in runtimetest | rootfs-* | .*) continue ;; esac
			[ -x "$p" ] && programs+=("$(basename "$p")")
		done
	else
		# KNOWN.md's rows name programs or globs of them.
		# shellcheck disable=SC2016 # the backquotes are Markdown
		while read -r pat; do
			for p in "$cache"/bin/$pat; do
				[ -x "$p" ] && programs+=("$(basename "$p")")
			done
		done < <(sed -n 's/^| *`\([^`]*\)` *| *`.*/\1/p' "$here/KNOWN.md" | sort -u)
		mapfile -t programs < <(printf '%s\n' "${programs[@]}" | sort -u)
	fi
fi

# The VM writes its results into the shared tree; the host reads them.
work=$top/tests/conformance/vm-results
rm -rf "$work"
mkdir -p "$work"
t0=$(date +%s)
"$top/tests/vm/run.sh" -e "BRIG_CONFORMANCE_CACHE=$cache" -- \
	"$here/compare-vm.sh" --in-vm "$work" "$timeout_secs" "${programs[@]}"
rc=$?
[ "$rc" = 0 ] || { echo "compare-vm.sh: the VM run failed (exit status $rc)" >&2; exit 1; }
secs=$(($(date +%s) - t0))
{
	echo "# Validation programs in the test VM: brig, runc and crun"
	echo
	echo "Made by \`sudo tests/conformance/compare-vm.sh${args:+ $args}\`"
	echo "on $(date -u +%Y-%m-%d) in $secs s (one VM boot, ${#programs[@]} programs). The"
	echo "TAP and stderr of every program are left in tests/conformance/vm-results/."
	echo
	table "$work" "${programs[@]}"
} >"${out:-/dev/stdout}"
