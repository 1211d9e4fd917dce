#!/bin/sh
# The integration suite as `make check` runs it: most files on this host,
# some in the test VM (tests/vm/, a pure cgroup v2 machine), all of the VM's
# in one boot, so that every cgroup layout brig supports is tested where
# there is one and no test is skipped:
#   - cgroups.bats and cgroups_limits.bats test cgroup v2: on this host when
#     its v2 hierarchy has the controllers they need, else in the VM (the
#     development and CI hosts are hybrid: their v2 tree is empty);
#   - cgroups_v1.bats tests v1 hierarchies: on this host when it has them
#     (hybrid or legacy); a pure v2 host has nothing for it to test;
#   - sandbox.bats, shim.bats and podman.bats work on either layout: on this
#     host, and in the VM as well when this host is not itself v2 with the
#     controllers, so the v2 side is covered too;
#   - criu (checkpoint.bats, shim_checkpoint.bats, podman_checkpoint.bats)
#     and the i386 syscall entry that the seccomp profiles must answer for
#     (seccomp_abi.bats) need kernel features the development and CI hosts'
#     kernels lack: always in the VM, whose Debian kernel has them;
#   - systemd.bats tests the systemd cgroup driver, which needs systemd as
#     PID 1 on a pure cgroup v2 machine with a system bus: always in a
#     second boot of the VM, with systemd (tests/vm/run.sh --systemd);
#     systemd_v1.bats the same driver on a hybrid host, in a third boot
#     with systemd.unified_cgroup_hierarchy=0;
#   - cri.bats and docker.bats run on this host; where it has no cgroup v2
#     controllers, their tests of limits, statistics, updates and teardown
#     (client_v2_filter) run in a boot of the VM of their own as well, so
#     Kubernetes' and Docker's paths to cgroup v2 are covered (the rest of
#     those files, at ~40 times a process start's cost there, would add a
#     quarter of an hour for nothing v2 changes).
#   - every other file runs on this host only: the sandbox_* files among
#     them (download, lifetime, session, template: the last imports the
#     images this host's podman saves, into a store of its own that the
#     host's kernel id-maps into its sandboxes);
#   - shim.bats and cri.bats run again on this host with containerd 1.7 and
#     2.x (scripts/fetch-containerd.sh: Debian trixie's and sid's).
# Ends with one line "N passed, N failed, N skipped" for both runs
# together. BRIG_CHECK_PARTS (below) picks parts: the sanitizer build runs
# "host" alone (scripts/test-sanitizers.sh), and CI's plain build all but
# "host" (scripts/test.sh), so the host's files run once, under the
# sanitizers.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/.." && pwd)}
BRIG=${BRIG:-$top/brig}
RECVTTY=${RECVTTY:-$top/tests/tools/recvtty}
SECCOMP_AGENT=${SECCOMP_AGENT:-$top/tests/tools/seccomp-agent}
export BRIG RECVTTY SECCOMP_AGENT top_srcdir="$top"

v2_files="cgroups.bats cgroups_limits.bats"
v1_files="cgroups_v1.bats"
either_files="podman.bats sandbox.bats sandbox_limits.bats sandbox_userns.bats shim.bats"
vm_files="checkpoint.bats podman_checkpoint.bats seccomp_abi.bats shim_checkpoint.bats"
systemd_files="systemd.bats"
systemd_v1_files="systemd_v1.bats"
client_v2_files="cri.bats docker.bats"
containerd_files="shim.bats cri.bats"
client_v2_filter='RunPodSandbox with|ContainerStats|UpdateContainerResources|limits hold|whole life on the handler|userns = |--memory|pause freezes|stats --no-stream|rm -f leaves'

host_has_v2_controllers() {
	[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || return 1
	for c in memory pids cpu io cpuset; do
		grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || return 1
	done
}

# v1 hierarchies (hybrid or legacy) binding what the either-layout files
# limit and freeze.
host_has_v1_controllers() {
	[ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ] || return 1
	for c in memory pids cpu freezer; do
		grep -qE " - cgroup [^ ]+ ([^ ]*,)?$c(,|$)" /proc/self/mountinfo || return 1
	done
}

# Which parts run: BRIG_CHECK_PARTS, words of "vm" (every boot of the test
# VM), "host" (this host's files) and "containerd" (the runs with the next
# containerd releases); all three by default.
parts=${BRIG_CHECK_PARTS:-vm host containerd}
has_part() {
	case " $parts " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

totals=$(mktemp "${TMPDIR:-/tmp}/brig-check.XXXXXX")
lane2=""
trap 'rm -f "$totals" ${lane2:+"$lane2"}' EXIT

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

v2_here=false
v1_here=false
host_has_v2_controllers && v2_here=true
host_has_v1_controllers && v1_here=true

host_files=""
vm_run=$vm_files
for f in "$here"/integration/*.bats; do
	name=$(basename "$f")
	case " $v2_files " in
	*" $name "*)
		if $v2_here; then host_files="$host_files $name"; else vm_run="$vm_run $name"; fi
		continue
		;;
	esac
	case " $v1_files " in
	*" $name "*)
		if $v1_here; then host_files="$host_files $name"; fi
		continue
		;;
	esac
	case " $either_files " in
	*" $name "*)
		if $v2_here || $v1_here; then host_files="$host_files $name"; fi
		$v2_here || vm_run="$vm_run $name"
		continue
		;;
	esac
	case " $vm_files $systemd_files $systemd_v1_files " in
	*" $name "*) continue ;;
	esac
	host_files="$host_files $name"
done
# The systemd files that exist (they may not yet).
systemd_run=""
for name in $systemd_files; do
	[ -f "$here/integration/$name" ] && systemd_run="$systemd_run $name"
done

# The VM's root (9p) can't be id-mapped: its sandboxes get the tree from an
# ext4 image of it, mounted read-only over the tree's path in there.
vm_tree_image() {
	"$here/vm/tree-image.sh" "${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}" || true
}

# The first lane: the VM's main boot, the longest run of all.
lane_vm_main() {
	# shellcheck disable=SC2086 # the file names have no blanks
	run_suite "tests in the test VM (cgroup v2 where this host has none; criu; i386 entry)" \
		"$here/vm/run.sh" -e "BRIG=$BRIG" -e "RECVTTY=$RECVTTY" -e "top_srcdir=$top" \
		-e "BRIG_VM_TREE_IMAGE=$tree_image" \
		"$here/vm/with-tree.sh" sh "$here/integration/run.sh" $vm_run
}

# The second lane: the VM's other boots, one after another.
lane_vm_others() {
	if [ -n "$systemd_run" ]; then
		# shellcheck disable=SC2086 # the file names have no blanks
		run_suite "tests in the test VM with systemd as PID 1 (systemd cgroup driver)" \
			"$here/vm/run.sh" --systemd -e "BRIG=$BRIG" -e "RECVTTY=$RECVTTY" -e "top_srcdir=$top" \
			-e "BRIG_VM_TREE_IMAGE=$tree_image" \
			"$here/vm/with-tree.sh" sh "$here/integration/run.sh" $systemd_run
	fi
	if ! $v2_here; then
		# shellcheck disable=SC2086 # the file names have no blanks
		run_suite "Kubernetes' and Docker's limits, statistics and teardown in the test VM (cgroup v2)" \
			"$here/vm/run.sh" -e "BRIG=$BRIG" -e "top_srcdir=$top" -e "BRIG_TEST_FILTER=$client_v2_filter" \
			sh "$here/integration/run.sh" $client_v2_files
	fi
	# shellcheck disable=SC2086 # the file names have no blanks
	run_suite "tests in the test VM with systemd as PID 1 on a hybrid layout" \
		env BRIG_VM_APPEND="${BRIG_VM_APPEND:-} systemd.unified_cgroup_hierarchy=0" \
		"$here/vm/run.sh" --systemd -e "BRIG=$BRIG" -e "top_srcdir=$top" \
		sh "$here/integration/run.sh" $systemd_v1_files
}

# The shim with the containerd of Debian's next releases (1.7, 2.x), fetched
# unpacked by scripts/fetch-containerd.sh: its files again, that version
# first on PATH.
lane_containerd() {
	if versions=$("$top/scripts/fetch-containerd.sh"); then
		echo "$versions" | while read -r suite version bin; do
			# shellcheck disable=SC2086 # the file names have no blanks
			run_suite "containerd $version (Debian $suite): $containerd_files" \
				env PATH="$bin:$PATH" sh "$here/integration/run.sh" $containerd_files
		done
	else
		echo "# containerd of Debian's next releases: could not be fetched"
		echo "0 passed, 1 failed, 0 skipped" >>"$totals"
	fi
}

# The VM's boots run in two lanes at once, a core each: the main boot in
# one, whose output streams; the other boots and then the containerd runs
# on this host in the other, whose output follows when both are done. The
# host's own files run alone afterwards: some of them measure time (a
# hostile tenant's slowdown).
if has_part vm; then
	# One emulated CPU each: two machines of two on two cores took 76 s
	# each for systemd_v1.bats, two of one 50 s (one alone, of two, 48 s).
	BRIG_VM_CPUS=${BRIG_VM_CPUS:-1}
	export BRIG_VM_CPUS
	tree_image=$(vm_tree_image)
	lane2=$(mktemp "${TMPDIR:-/tmp}/brig-lane.XXXXXX")
	{
		lane_vm_others
		if has_part containerd; then lane_containerd; fi
	} >"$lane2" 2>&1 &
	lane2_pid=$!
	lane_vm_main
	wait "$lane2_pid"
	cat "$lane2"
elif has_part containerd; then
	lane_containerd
fi
if has_part host; then
	$v1_here || echo "# no v1 hierarchies of memory, pids, cpu and freezer here: $v1_files not run"
	# shellcheck disable=SC2086
	run_suite "integration tests on this host" sh "$here/integration/run.sh" $host_files
fi

awk '{ p += $1; f += $3; s += $5 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s; exit f > 0 }' "$totals"
