#!/usr/bin/env bash
# shellcheck disable=SC2154 # bats' own variables
# What shim.bats and shim_checkpoint.bats share: their bats hooks (a
# private containerd, containerd-helpers.bash, started once per file with
# the busybox image and a log of its events), and the checks a test makes
# of a task.

# shellcheck disable=SC2034 # the bats files use it
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
# task is in the log (within 30 s). Matches are counted: jq 1.6's -e
# exits 0 on empty input, which would find an event that never came.
wait_for_event() {
	local topic=$1 task=$2 cond=${3:-true}
	for _ in $(seq 1 300); do
		grep -F " $topic " "$CTRD_DIR/events.log" | sed 's/^[^{]*//' |
			jq -c --arg t "$task" "select(.container_id == \$t) | select($cond)" 2>/dev/null |
			grep -q . && return 0
		sleep 0.1
	done
	echo "no $topic event for $task (${cond}); the log:" >&2
	cat "$CTRD_DIR/events.log" >&2
	return 1
}

# The hooks of both files: containerd with the image and its events for
# the file; what a test leaves running removed, so the next starts clean.
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
