#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # shell programs run inside the container; bats variables
# containerd-shim-brig-v2's checkpoints under a real containerd (as
# shim.bats starts it): `ctr task checkpoint` and runc's
# CheckpointOptions{exit}. criu needs kernel features the development and
# CI hosts' kernels lack, so `make check` runs this file in the test VM.

load helpers
load containerd-helpers
load shim-helpers # and with it the setup and teardown hooks

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

@test "ctr containers restore --live: a checkpointed counter runs on in a new container, from where it was" {
	command -v criu >/dev/null || fail "criu is not installed (scripts/install-deps.sh)"
	ctrd run -d "${RT[@]}" "$CTRD_IMAGE" t-src \
		sh -c 'i=0; while :; do i=$((i+1)); echo $i >/count; sleep 0.1; done'
	wait_for_status t-src RUNNING
	# Counted well past what a fresh start reaches in the second below.
	sleep 3
	run ctrd containers checkpoint --task --image t-src brigtest/ckpt:1
	[ "$status" -eq 0 ] || fail "checkpoint: $output; shim log: $(tail -n 5 "$CTRD_DIR/containerd.log")"
	at=$(ctrd task exec --exec-id e1 t-src cat /count)
	ctrd task kill -s KILL t-src
	killed_then_deleted t-src
	ctrd containers rm t-src

	# The shim restores the images containerd unpacked, as the task's start.
	run ctrd containers restore --live t-dst brigtest/ckpt:1
	[ "$status" -eq 0 ] || fail "restore: $output; containerd: $(grep -E 'level=(error|warning)' "$CTRD_DIR/containerd.log" | tail -n 5)"
	wait_for_status t-dst RUNNING
	# The counter went on from the shell's memory: past where it was.
	sleep 1
	now=$(ctrd task exec --exec-id e2 t-dst cat /count)
	[ "$now" -gt "$at" ] || fail "counter at the checkpoint $at, restored $now"
	ctrd task kill -s KILL t-dst
	killed_then_deleted t-dst
	ctrd containers rm t-dst
}
