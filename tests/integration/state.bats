#!/usr/bin/env bats
# `brig state`: the OCI state of a container, as JSON.

load helpers

RFC3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$'

@test "state of a created container has every field of the runtime spec" {
	update_config '.annotations = {"org.example.key": "value", "other": ""}'
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]

	run brig state "$CID"
	[ "$status" -eq 0 ]
	json=$output
	jq -e . <<<"$json" >/dev/null
	[[ "$(jq -r .ociVersion <<<"$json")" =~ ^1\.[0-9]+\.[0-9]+ ]]
	[ "$(jq -r .id <<<"$json")" = "$CID" ]
	[ "$(jq -r .status <<<"$json")" = created ]
	[ "$(jq -r '.pid | type' <<<"$json")" = number ]
	kill -0 "$(jq -r .pid <<<"$json")"
	[ "$(jq -r .bundle <<<"$json")" = "$BUNDLE" ]
	[ "$(jq -r .rootfs <<<"$json")" = "$ROOTFS" ]
	[[ "$(jq -r .created <<<"$json")" =~ $RFC3339 ]]
	[ "$(jq -r '.owner | type' <<<"$json")" = string ]
	[ "$(jq -r '.annotations["org.example.key"]' <<<"$json")" = value ]
	[ "$(jq -r '.annotations.other' <<<"$json")" = "" ]
}

@test "state's created time is the time of create" {
	set_args sleep 100
	before=$(date +%s)
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	after=$(date +%s)
	created=$(date -d "$(brig state "$CID" | jq -r .created)" +%s)
	[ "$created" -ge $((before - 1)) ]
	[ "$created" -le $((after + 1)) ]
}

@test "state follows the lifecycle: created, running, stopped" {
	set_args sh -c 'read line; exit 0'
	mkfifo "$BATS_TEST_TMPDIR/in"
	# Keep the fifo open for writing so the container blocks on read.
	exec 7<>"$BATS_TEST_TMPDIR/in"
	brig create "$CID" <"$BATS_TEST_TMPDIR/in" >"$CT_OUT" 2>"$CT_ERR"
	[ "$(container_status "$CID")" = created ]

	brig start "$CID"
	wait_for_status "$CID" running
	pid=$(container_pid "$CID")
	kill -0 "$pid"

	echo go >&7
	exec 7>&-
	wait_for_status "$CID" stopped
	run brig state "$CID"
	[ "$status" -eq 0 ]
	# A stopped container has no process; the spec leaves pid out or 0.
	[ "$(jq -r '.pid // 0' <<<"$output")" = 0 ]
	[ "$(jq -r .id <<<"$output")" = "$CID" ]
	[ "$(jq -r .bundle <<<"$output")" = "$BUNDLE" ]
}

@test "a container whose process was killed is stopped" {
	set_args sleep 100
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	kill -9 "$(container_pid "$CID")"
	wait_for_status "$CID" stopped
}

@test "state of a container that does not exist fails" {
	run --separate-stderr brig state nosuch
	assert_one_line_error brig:nosuch
	[ -z "$output" ]
}

@test "state only looks in its own --root" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	other=$BATS_TEST_TMPDIR/other-root
	mkdir -p "$other"
	run "$BRIG" --root "$other" state "$CID"
	[ "$status" -ne 0 ]
}
