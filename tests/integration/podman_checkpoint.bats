#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the container
# podman's container checkpoint and restore with brig as its OCI runtime
# (podman-helpers.bash). criu needs kernel features the development and
# CI hosts' kernels lack, so `make check` runs this file in the test VM.

load helpers
load podman-helpers # and with it the setup and teardown hooks

@test "podman: container checkpoint and restore go on counting from where they were" {
	# criu: as checkpoint.bats, this needs the test VM's kernel.
	PATH=$PATH:/usr/sbin criu check >/dev/null 2>&1 || fail "criu check fails on this kernel: run this file in the VM"
	podman_cmd run -d --name ckpt "$PODMAN_IMAGE" \
		sh -c 'i=0; while :; do i=$((i+1)); echo $i; sleep 0.2; done'
	wait_for_log ckpt 5
	id=$(full_id ckpt)
	podman_cmd container checkpoint ckpt
	[ "$(podman_cmd inspect --format '{{.State.Status}}' ckpt)" = exited ]
	run "$BRIG" list -q
	[ -z "$output" ] || fail "brig still lists: $output"
	at_dump=$(podman_cmd logs ckpt | tail -n 1)
	podman_cmd container restore ckpt
	[ "$(podman_cmd inspect --format '{{.State.Status}}' ckpt)" = running ]
	[ "$("$BRIG" state "$id" | jq -r .status)" = running ]
	wait_for_log ckpt $((at_dump + 3))
	# One counter from 1, never restarted: memory came back.
	log=$(podman_cmd logs ckpt | tr -d '\r')
	[ "$(seq "$(tail -n 1 <<<"$log")")" = "$log" ] || fail "not one count from 1: $(tr '\n' ' ' <<<"$log")"
	podman_cmd rm -f -t 0 ckpt
}
