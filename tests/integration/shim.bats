#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # shell programs run inside the container; bats variables
# containerd-shim-brig-v2 under a real containerd: a private daemon (own
# socket, root and state on a tmpfs), a busybox image imported from an OCI
# layout, and every ctr command a user would try: run --rm, exit codes,
# stdout and stderr, -d, exec, -t, pause and resume, metrics, kill, delete,
# OOM, containerd restarted under a running container, an init killed
# from outside, task checkpoint (criu). Needs cgroup v2 with the memory, pids and cpu controllers,
# so `make check` runs it in the test VM. ctr commands cost seconds there:
# each test does a lot with few of them.

load helpers
load containerd-helpers

RT=(--runtime io.containerd.brig.v2)

events_start() {
	ctr --address "$CTRD_DIR/containerd.sock" events >>"$CTRD_DIR/events.log" 2>&1 &
	echo $! >"$CTRD_DIR/events.pid"
	# The subscription is live once ctr has connected: give it a moment.
	sleep 0.5
}

events_stop() {
	[ -f "$CTRD_DIR/events.pid" ] && kill "$(cat "$CTRD_DIR/events.pid")" 2>/dev/null
	rm -f "$CTRD_DIR/events.pid"
}

# wait_for_event TOPIC TASK [JQ_CONDITION]: an event of that topic for the
# task is in the log (within 30 s).
wait_for_event() {
	local topic=$1 task=$2 cond=${3:-true}
	for _ in $(seq 1 300); do
		grep -F " $topic " "$CTRD_DIR/events.log" | sed 's/^[^{]*//' |
			jq -e --arg t "$task" "select(.container_id == \$t) | $cond" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "no $topic event for $task (${cond}); the log:" >&2
	cat "$CTRD_DIR/events.log" >&2
	return 1
}

setup_file() {
	SHIM_DIR=${SHIM_DIR:-$(dirname "$BRIG")}
	[ -x "$SHIM_DIR/containerd-shim-brig-v2" ] || {
		echo "no containerd-shim-brig-v2 in $SHIM_DIR (build it, or set SHIM_DIR)" >&2
		return 1
	}
	command -v containerd >/dev/null || {
		echo "containerd is not installed (scripts/install-deps.sh)" >&2
		return 1
	}
	export SHIM_DIR
	CTRD_DIR=$(mktemp -d /run/brig-shimtest.XXXXXX)
	export CTRD_DIR
	containerd_start "$CTRD_DIR"
	containerd_import_busybox
	events_start
}

teardown_file() {
	events_stop
	containerd_stop
	rm -rf "$CTRD_DIR"
}

setup() {
	:
}

# What a test leaves running is removed, so the next one starts clean.
teardown() {
	ctrd_remove_all
}

task_pid() {
	ctrd task ls | awk -v t="$1" '$1 == t { print $2 }'
}

# killed_then_deleted TASK: the task stops with 128+SIGKILL reported, and
# deleting it then leaves nothing listed.
killed_then_deleted() {
	wait_for_status "$1" STOPPED
	wait_for_event /tasks/exit "$1" '.exit_status == 137'
	run ctrd task delete "$1"
	[ "$status" -eq 0 ] || fail "delete $1: $output"
	run ctrd task ls -q
	[[ "$output" != *"$1"* ]]
}

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

@test "ctr task pause, resume and metrics (cgroup v2)" {
	ctrd run -d --memory-limit 67108864 "${RT[@]}" "$CTRD_IMAGE" t-p sleep 1000
	wait_for_status t-p RUNNING
	ctrd task pause t-p
	wait_for_status t-p PAUSED
	wait_for_event /tasks/paused t-p
	freeze=$(find /sys/fs/cgroup -path "*t-p*" -name cgroup.freeze | head -n1)
	[ -n "$freeze" ] && [ "$(cat "$freeze")" = 1 ]
	ctrd task resume t-p
	wait_for_status t-p RUNNING
	wait_for_event /tasks/resumed t-p
	[ "$(cat "$freeze")" = 0 ]
	run ctrd task metrics --format json t-p
	[ "$status" -eq 0 ] || fail "metrics: $output"
	echo "$output" | jq -e '.pids.current >= 1' >/dev/null || fail "pids: $output"
	echo "$output" | jq -e '.memory.usage > 0 and .memory.usage_limit == 67108864' >/dev/null ||
		fail "memory: $output"
	echo "$output" | jq -e '.cpu.usage_usec > 0' >/dev/null || fail "cpu: $output"
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
	grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null ||
		fail "no cgroup v2 memory controller: run this file in the VM"
	# 2^24 * 16 bytes, far over the limit; bounded all the same.
	run ctrd run --rm --memory-limit 16777216 "${RT[@]}" "$CTRD_IMAGE" t-oom \
		sh -c 'x=0123456789abcdef; i=0; while [ $i -lt 24 ]; do x=$x$x; i=$((i+1)); done'
	[ "$status" -eq 137 ] || fail "status $status: $output"
	wait_for_event /tasks/oom t-oom
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

@test "ctr task checkpoint: a running counter is dumped into a checkpoint image and keeps counting" {
	command -v criu >/dev/null || fail "criu is not installed (scripts/install-deps.sh)"
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-ckpt \
		sh -c 'i=0; while :; do i=$((i+1)); echo $i >/count; sleep 0.1; done'
	wait_for_status t-ckpt RUNNING
	pid=$(task_pid t-ckpt)
	run ctrd task checkpoint t-ckpt
	[ "$status" -eq 0 ] || fail "checkpoint: $output; shim log: $(tail -n 5 "$CTRD_DIR/containerd.log")"
	name=$output
	[[ "$name" == */checkpoint/t-ckpt:* ]] || fail "checkpoint name: $name"
	ctrd image ls -q | grep -qxF "$name"
	# The image's index holds criu's dump (a tar of the image directory).
	digest=$(ctrd image ls | awk -v n="$name" '$1 == n { print $3 }')
	ctrd content get "$digest" |
		jq -e '[.manifests[].mediaType] | index("application/vnd.containerd.container.criu.checkpoint.criu.tar") != null' \
			>/dev/null || fail "no criu layer in $(ctrd content get "$digest")"
	# ctr paused the task for the dump and resumed it: same init, still counting.
	wait_for_status t-ckpt RUNNING
	[ "$(task_pid t-ckpt)" = "$pid" ]
	before=$(ctrd task exec --exec-id c1 t-ckpt cat /count)
	sleep 1
	after=$(ctrd task exec --exec-id c2 t-ckpt cat /count)
	[ "$after" -gt "$before" ] || fail "counter stopped: $before then $after"
	ctrd task kill -s KILL t-ckpt
	wait_for_status t-ckpt STOPPED
	ctrd task delete t-ckpt
}

@test "Checkpoint with runc's CheckpointOptions{exit}: the images are written, the task stops, its exit is reported" {
	tool=$(dirname "$BRIG")/tests/tools/shim-checkpoint
	[ -x "$tool" ] || fail "no $tool (build it)"
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-ckx sh -c 'while :; do sleep 0.1; done'
	wait_for_status t-ckx RUNNING
	address=$(cat "$CTRD_DIR/state/io.containerd.runtime.v2.task/$CTRD_NS/t-ckx/address")
	run "$tool" "$address" t-ckx "$CTRD_DIR/ckx-images" exit
	[ "$status" -eq 0 ] || fail "checkpoint: $output"
	[ -s "$CTRD_DIR/ckx-images/inventory.img" ] || fail "no criu images: $(ls "$CTRD_DIR/ckx-images")"
	[ -s "$CTRD_DIR/ckx-images/descriptors.json" ]
	killed_then_deleted t-ckx
}
