#!/bin/sh
# The integration suite as `make check` runs it. Every bats file runs on
# this host, except the cgroup and podman ones when the host's cgroup v2
# hierarchy lacks the controllers they need (the development and CI hosts are
# hybrid): those run in the test VM (tests/vm/), all in one boot, so no
# cgroup test is skipped. Ends with one line "N passed, N failed, N skipped"
# for both runs together. BRIG_CHECK_HOST_ONLY=1 runs only the host part
# (the sanitizer build does: scripts/test-sanitizers.sh).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/.." && pwd)}
BRIG=${BRIG:-$top/brig}
RECVTTY=${RECVTTY:-$top/tests/tools/recvtty}
SECCOMP_AGENT=${SECCOMP_AGENT:-$top/tests/tools/seccomp-agent}
export BRIG RECVTTY SECCOMP_AGENT top_srcdir="$top"

cgroup_files="cgroups.bats cgroups_limits.bats podman.bats sandbox.bats shim.bats"
# criu, and the i386 syscall entry that the seccomp profiles must answer
# for, need kernel features the development and CI hosts' kernels lack:
# these always run in the VM, whose Debian kernel has them.
vm_files="checkpoint.bats seccomp_abi.bats"

host_has_v2_controllers() {
	[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || return 1
	for c in memory pids cpu io cpuset; do
		grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || return 1
	done
}

totals=$(mktemp "${TMPDIR:-/tmp}/brig-check.XXXXXX")
trap 'rm -f "$totals"' EXIT

# run_suite LABEL COMMAND...: runs it, keeps its closing count line.
run_suite() {
	label=$1
	shift
	echo "# ---- $label"
	out=$(mktemp "${TMPDIR:-/tmp}/brig-suite.XXXXXX")
	"$@" 2>&1 | tee "$out"
	count=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
	rm -f "$out"
	# A run that never printed its count (the VM did not boot) failed.
	echo "${count:-0 passed, 1 failed, 0 skipped}" >>"$totals"
}

host_files=""
for f in "$here"/integration/*.bats; do
	name=$(basename "$f")
	case " $cgroup_files " in
	*" $name "*) host_has_v2_controllers || continue ;;
	esac
	case " $vm_files " in
	*" $name "*) continue ;;
	esac
	host_files="$host_files $name"
done

vm_run=$vm_files
host_has_v2_controllers || vm_run="$cgroup_files $vm_files"
if [ "${BRIG_CHECK_HOST_ONLY:-0}" != 1 ]; then
	# shellcheck disable=SC2086 # the file names have no blanks
	run_suite "tests in the test VM (cgroup v2 controllers this host lacks; criu)" \
		"$here/vm/run.sh" -e "BRIG=$BRIG" -e "RECVTTY=$RECVTTY" -e "top_srcdir=$top" \
		sh "$here/integration/run.sh" $vm_run
fi
# shellcheck disable=SC2086
run_suite "integration tests on this host" sh "$here/integration/run.sh" $host_files

awk '{ p += $1; f += $3; s += $5 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s; exit f > 0 }' "$totals"
