#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # shell programs run inside the container; bats variables
# containerd-shim-brig-v2 under a real containerd: a private daemon (own
# socket, root and state on a tmpfs), a busybox image imported from an OCI
# layout, and every ctr command a user would try: run --rm, exit codes,
# stdout and stderr, -d, exec, -t, pause and resume, metrics, kill, delete,
# OOM, a limit the host can't apply, containerd restarted under a running
# container, an init killed from outside. Needs the memory, pids, cpu and
# freezer controllers (cgroup v2, or v1 hierarchies): `make check` runs it
# on the host and in the test VM, so both layouts are covered; the
# checkpoints (criu) are in shim_checkpoint.bats, VM only. ctr commands
# cost seconds in the VM: each test does a lot with few of them.

load helpers
load containerd-helpers
load shim-helpers # and with it the setup and teardown hooks

shim_running_for() {
	pgrep -f "containerd-shim-brig-v2 .*-id $1( |$)" >/dev/null
}

@test "ctr run --rm: the output, exit status 0, the events, nothing left behind" {
	run ctrd run --rm "${RT[@]}" "$CTRD_IMAGE" t-echo echo hello
	[ "$status" -eq 0 ] || fail "ctr run: $output"
	[ "$output" = hello ]
	wait_for_event /tasks/create t-echo
	wait_for_event /tasks/start t-echo
	wait_for_event /tasks/exit t-echo '.exit_status == null or .exit_status == 0'
	wait_for_event /tasks/delete t-echo
	run ctrd container ls -q
	[[ "$output" != *t-echo* ]]
	# The shim exits once its last task is gone.
	for _ in $(seq 1 100); do shim_running_for t-echo || break; sleep 0.1; done
	run ! shim_running_for t-echo
}

@test "ctr run: the exit code, stdout and stderr apart" {
	run --separate-stderr ctrd run --rm "${RT[@]}" "$CTRD_IMAGE" t-exit \
		sh -c 'echo to-out; echo to-err >&2; exit 7'
	[ "$status" -eq 7 ] || fail "status $status: $output / $stderr"
	[ "$output" = to-out ]
	[[ "$stderr" == *to-err* ]]
	[[ "$output" != *to-err* ]]
}

@test "ctr run -d, task exec (output, exit code), task ps, kill, delete" {
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-d sleep 1000
	wait_for_status t-d RUNNING
	run ctrd task exec --exec-id e1 t-d ps
	[ "$status" -eq 0 ] || fail "exec ps: $output"
	[[ "$output" == *"sleep 1000"* ]]
	run ctrd task exec --exec-id e2 t-d sh -c 'echo from-exec; exit 4'
	[ "$status" -eq 4 ]
	[ "$output" = from-exec ]
	wait_for_event /tasks/exec-added t-d '.exec_id == "e2"'
	wait_for_event /tasks/exec-started t-d '.exec_id == "e2"'
	pid=$(task_pid t-d)
	run ctrd task ps t-d
	[ "$status" -eq 0 ]
	[[ "$output" == *"$pid"* ]]
	ctrd task kill -s KILL t-d
	wait_for_status t-d STOPPED
	wait_for_event /tasks/exit t-d '.exit_status == 137'
	ctrd task delete t-d
	run ctrd task ls -q
	[[ "$output" != *t-d* ]]
	run ! kill -0 "$pid"
}

@test "a sandboxed task (annotation run.brig.profile): task exec runs as the sandbox user, without capabilities" {
	[ -d /var/lib/brig/rootfs/usr/bin ] || fail "no sandbox tree: run \`make rootfs\`"
	ctrd run -d "${RT[@]}" --annotation run.brig.profile=sandbox "$CTRD_IMAGE" t-sb sleep 1000
	wait_for_status t-sb RUNNING
	# ctr asks for uid 0 and its default capabilities; the sandbox decides.
	run ctrd task exec --exec-id e1 t-sb sh -c 'id -u; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; echo $LD_PRELOAD'
	[ "$status" -eq 0 ] || fail "exec: $output"
	[ "$(echo $output)" = "1000 CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2" ]
	run ctrd task exec --exec-id e2 --user 0 t-sb cat /proc/1/cmdline
	[ "$status" -eq 0 ]
	[[ "$output" == /usr/sbin/brig-init* ]]
	ctrd task kill -s KILL t-sb
	wait_for_status t-sb STOPPED
	ctrd task delete t-sb
	refute grep -q "t-sb/data" /proc/self/mountinfo
}

@test "ctr task pause, resume and metrics of a task with a memory limit" {
	ctrd run -d --memory-limit 67108864 "${RT[@]}" "$CTRD_IMAGE" t-p sleep 1000
	wait_for_status t-p RUNNING
	pid=$(task_pid t-p)
	# The limit containerd asked for, as CRI asks for a pod's, is the cgroup's.
	[ "$(pid_memory_limit "$pid")" = 67108864 ] || fail "memory limit: $(pid_memory_limit "$pid")"
	ctrd task pause t-p
	wait_for_status t-p PAUSED
	wait_for_event /tasks/paused t-p
	pid_frozen "$pid" || fail "$(pid_cgroup_dir "$pid" freezer) is not frozen"
	ctrd task resume t-p
	wait_for_status t-p RUNNING
	wait_for_event /tasks/resumed t-p
	refute pid_frozen "$pid"
	run ctrd task metrics --format json t-p
	[ "$status" -eq 0 ] && [ -n "$output" ] || fail "metrics: $output"
	# The shim answers io.containerd.cgroups.v1.Metrics on v1 hierarchies,
	# v2.Metrics on v2, as runc's shim does; the same facts in either shape.
	if cgroup_is_v1; then
		pids='.pids.current' usage='.memory.usage.usage' limit='.memory.usage.limit' cpu='.cpu.usage.total'
	else
		pids='.pids.current' usage='.memory.usage' limit='.memory.usage_limit' cpu='.cpu.usage_usec'
	fi
	echo "$output" | jq -e "$pids >= 1" >/dev/null || fail "pids: $output"
	echo "$output" | jq -e "$usage > 0 and $limit == 67108864" >/dev/null || fail "memory: $output"
	echo "$output" | jq -e "$cpu > 0" >/dev/null || fail "cpu: $output"
}

@test "ctr task kill: the signal reaches the init, its exit status is reported" {
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-k sh -c 'trap "exit 42" TERM; while :; do sleep 0.1; done'
	wait_for_status t-k RUNNING
	ctrd task kill -s TERM t-k
	wait_for_status t-k STOPPED
	wait_for_event /tasks/exit t-k '.exit_status == 42'
	ctrd task delete t-k
}

@test "ctr run -t: the process has a terminal" {
	command -v script >/dev/null || fail "script(1) is missing (util-linux)"
	# ctr puts its terminal in raw mode: it must stay in the foreground
	# process group (--foreground), or SIGTTOU stops it.
	run script -qefc "timeout --foreground 120 ctr --address $CTRD_DIR/containerd.sock --namespace $CTRD_NS \
		run -t --rm --runtime io.containerd.brig.v2 $CTRD_IMAGE t-tty \
		sh -c 'test -t 0 && test -t 1 && echo on-a-tty; tty'" /dev/null
	[ "$status" -eq 0 ] || fail "ctr run -t: status $status: $output"
	[[ "$output" == *on-a-tty* ]]
	[[ "$output" == */dev/pts/* ]]
}

@test "an OOM kill: the task's exit and an oom event" {
	# Without a memory controller nothing would stop the process below.
	host_has_controller memory || fail "this host has no memory controller"
	# 2^24 * 16 bytes, far over the limit; bounded all the same.
	run ctrd run --rm --memory-limit 16777216 "${RT[@]}" "$CTRD_IMAGE" t-oom \
		sh -c 'x=0123456789abcdef; i=0; while [ $i -lt 24 ]; do x=$x$x; i=$((i+1)); done'
	[ "$status" -eq 137 ] || fail "status $status: $output"
	wait_for_event /tasks/oom t-oom
}

# config_spec ID JQ_EXPR [JQ_OPTION...]: a spec for `ctr run --config`
# (which takes it whole, so any field of linux.resources reaches the
# shim): ctr's own default, a busybox root in $CTRD_DIR, the task's own
# cgroup, then JQ_EXPR.
config_spec() {
	local id=$1 expr=$2 root=$CTRD_DIR/config-root
	shift 2
	if [ ! -d "$root" ]; then
		mkdir -p "$root/bin" "$root/proc" "$root/dev" "$root/sys"
		cp "$BUSYBOX" "$root/bin/sh"
	fi
	ctrd oci spec | jq --arg root "$root" --arg cg "/$CTRD_NS/$id" '.root.path = $root
		| .process.terminal = false | .process.args = ["sh", "-c", "echo ran"]
		| .linux.cgroupsPath = $cg' | jq "$@" "$expr" >"$CTRD_DIR/$id.json"
}

# run_config_spec ID: ctr run of it, its stderr with its stdout.
run_config_spec() {
	run ctrd run --config "$CTRD_DIR/$1.json" "${RT[@]}" "$1"
}

# refused_and_gone ID WORD...: the create failed naming every WORD, and no
# task, state or cgroup directory of ID is left.
refused_and_gone() {
	local id=$1 word d
	shift
	[ "$status" -ne 0 ] || fail "$id was created: $output"
	for word in "$@"; do
		[[ "$output" == *"$word"* ]] || fail "the error does not name $word: $output"
	done
	run ctrd task ls -q
	[[ "$output" != *"$id"* ]] || fail "task $id is listed: $output"
	[ ! -e "/run/containerd/brig/$CTRD_NS/$id" ] || fail "brig's state of $id survived"
	for d in /sys/fs/cgroup/"$CTRD_NS/$id" /sys/fs/cgroup/*/"$CTRD_NS/$id"; do
		[ ! -e "$d" ] || fail "cgroup $d survived"
	done
	ctrd container rm "$id"
}

@test "a limit this host can't apply fails the create and names it; nothing is left" {
	# The spec runs as it is: what fails below is the limit alone.
	config_spec t-lim-ok .
	run_config_spec t-lim-ok
	[ "$status" -eq 0 ] && [ "$output" = ran ] || fail "the spec without a limit: $output"
	ctrd container rm t-lim-ok
	# A hugepage size this kernel does not offer: no hugetlb controller
	# (this CI host) or no hugetlb file of that size (the VM) refuses it.
	for size in 64KB 32MB 16GB; do
		kb=$(($(numfmt --from=iec "${size%B}") / 1024))
		[ -e "/sys/kernel/mm/hugepages/hugepages-${kb}kB" ] || break
	done
	config_spec t-lim-huge '.linux.resources.hugepageLimits = [{pageSize: $s, limit: 2097152}]' --arg s "$size"
	run_config_spec t-lim-huge
	refused_and_gone t-lim-huge hugetlb
	# net_cls is a v1 controller: where no hierarchy binds it, a classID
	# can't be applied (on v2 it is ignored, as runc does).
	if cgroup_is_v1 && ! host_has_controller net_cls; then
		config_spec t-lim-net '.linux.resources.network = {classID: 1048577}'
		run_config_spec t-lim-net
		refused_and_gone t-lim-net net_cls linux.resources.network
	fi
}

@test "containerd restarted while a container runs: the task keeps running and answers" {
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-r sleep 1000
	wait_for_status t-r RUNNING
	pid=$(task_pid t-r)
	events_stop
	containerd_kill
	kill -0 "$pid"
	shim_running_for t-r
	containerd_start "$CTRD_DIR"
	events_start
	wait_for_status t-r RUNNING
	[ "$(task_pid t-r)" = "$pid" ]
	run ctrd task exec --exec-id again t-r echo still-here
	[ "$status" -eq 0 ] && [ "$output" = still-here ]
	ctrd task kill -s KILL t-r
	wait_for_status t-r STOPPED
	wait_for_event /tasks/exit t-r '.exit_status == 137'
	ctrd task delete t-r
}

@test "the init killed from outside: its exit is reported, the task can be deleted" {
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-i sleep 1000
	wait_for_status t-i RUNNING
	kill -KILL "$(task_pid t-i)"
	killed_then_deleted t-i
}
