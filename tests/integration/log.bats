#!/usr/bin/env bats
# The global flags: --log, --log-format, --debug, --systemd-cgroup, --root.

load helpers

setup() {
	setup_bundle
	LOGFILE=$BATS_TEST_TMPDIR/brig.log
}

teardown() {
	# A container made without --root lives outside this test's $ROOT.
	if [ -n "${NO_ROOT_ID:-}" ]; then
		"$BRIG" delete --force "$NO_ROOT_ID" >/dev/null 2>&1 || true
	fi
	teardown_bundle
}

RFC3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$'

@test "--log-format json writes the error of a failing command as a JSON line" {
	run --separate-stderr brig --log "$LOGFILE" --log-format json state nosuch
	[ "$status" -ne 0 ]
	[ -s "$LOGFILE" ]
	line=$(jq -c 'select(.level == "error")' "$LOGFILE" | tail -1)
	[ -n "$line" ]
	[ -n "$(jq -r .msg <<<"$line")" ]
	[[ "$(jq -r .time <<<"$line")" =~ $RFC3339 ]]
	# Every line is JSON.
	jq -e . "$LOGFILE" >/dev/null
}

@test "the JSON log line carries the same message as stderr" {
	run --separate-stderr brig --log "$LOGFILE" --log-format json state nosuch
	[ "$status" -ne 0 ]
	msg=$(jq -r 'select(.level == "error") | .msg' "$LOGFILE" | tail -1)
	[ -n "$msg" ]
	[[ "$stderr" == *"$msg"* ]]
	# brig-specific: the message names the container.
	is_runc || [[ "$msg" == *nosuch* ]]
}

@test "--log-format text writes a line with the message" {
	run --separate-stderr brig --log "$LOGFILE" --log-format text state nosuch
	[ "$status" -ne 0 ]
	[ -s "$LOGFILE" ]
	msg=$stderr
	# stderr may itself be a formatted line; compare on the message.
	msg=${msg##*msg=\"}
	msg=${msg%\"}
	# brig's stderr line is "brig: MESSAGE"; the log line carries MESSAGE.
	msg=${msg#brig: }
	grep -qF -- "$msg" "$LOGFILE"
	grep -q error "$LOGFILE"
	refute jq -e . "$LOGFILE" >/dev/null 2>&1
}

@test "text is the default --log-format" {
	run --separate-stderr brig --log "$LOGFILE" state nosuch
	[ "$status" -ne 0 ]
	[ -s "$LOGFILE" ]
	[ "$(head -c 1 "$LOGFILE")" != "{" ]
}

@test "--log appends: two failures give two error lines" {
	run brig --log "$LOGFILE" --log-format json state nosuch-1
	[ "$status" -ne 0 ]
	run brig --log "$LOGFILE" --log-format json delete nosuch-2
	[ "$status" -ne 0 ]
	[ "$(jq -c 'select(.level == "error")' "$LOGFILE" | wc -l)" -eq 2 ]
}

@test "a failing create logs its error too" {
	update_config '.process.args = []'
	run brig_detached --log "$LOGFILE" --log-format json create "$CID"
	[ "$status" -ne 0 ]
	[ "$(jq -r 'select(.level == "error") | .msg' "$LOGFILE" | wc -l)" -ge 1 ]
	assert_no_leftovers "$CID"
}

@test "a successful run logs no error" {
	set_args echo fine
	run brig --log "$LOGFILE" --log-format json run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = fine ]
	if [ -s "$LOGFILE" ]; then
		jq -e . "$LOGFILE" >/dev/null
		[ -z "$(jq -c 'select(.level == "error")' "$LOGFILE")" ]
	fi
}

@test "--debug adds debug lines to the log" {
	set_args echo fine
	run brig --debug --log "$LOGFILE" --log-format json run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = fine ]
	jq -e . "$LOGFILE" >/dev/null
	[ -n "$(jq -c 'select(.level == "debug")' "$LOGFILE")" ]
	# Debug output goes to the log, not to the container's stdout.
	[ "${#lines[@]}" -eq 1 ]
}

@test "--systemd-cgroup is accepted" {
	run brig --systemd-cgroup list
	[ "$status" -eq 0 ]
}

@test "--root is created when it does not exist" {
	set_args echo fine
	ROOT=$BATS_TEST_TMPDIR/not/yet/there
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = fine ]
	[ -d "$ROOT" ]
}

@test "without --root, state is kept under /run/brig" {
	# brig-specific: runc's default is /run/runc.
	set_args sleep 100
	NO_ROOT_ID=$CID-default-root
	BRIG_TEST_MARK=$MARK "$BRIG" create "$NO_ROOT_ID" </dev/null >"$CT_OUT" 2>"$CT_ERR"
	[ -d "/run/brig/$NO_ROOT_ID" ]
	run "$BRIG" state "$NO_ROOT_ID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = created ]
	run "$BRIG" delete --force "$NO_ROOT_ID"
	[ "$status" -eq 0 ]
	[ ! -e "/run/brig/$NO_ROOT_ID" ]
}
