#!/usr/bin/env bats
# `brig list`: every container under --root.

load helpers

# The header row, with runs of spaces squeezed.
header() {
	tr -s ' \t' ' ' <<<"${lines[0]}" | sed 's/ $//'
}

@test "list with no containers prints only the header" {
	run brig list
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$(header)" = "ID PID STATUS BUNDLE CREATED OWNER" ]
}

@test "list -q with no containers prints nothing" {
	run brig list -q
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "list -f json with no containers prints an empty array" {
	run brig list -f json
	[ "$status" -eq 0 ]
	# runc prints null here; brig prints []. Both have no entries.
	[ "$(jq 'length' <<<"$output")" -eq 0 ]
}

@test "list shows each container in a table" {
	set_args sleep 100
	run brig_detached create "$CID-a"
	[ "$status" -eq 0 ]
	run brig_detached run -d "$CID-b"
	[ "$status" -eq 0 ]
	wait_for_status "$CID-b" running

	run brig list
	[ "$status" -eq 0 ]
	[ "$(header)" = "ID PID STATUS BUNDLE CREATED OWNER" ]
	[ "${#lines[@]}" -eq 3 ]
	row_a=$(printf '%s\n' "${lines[@]}" | awk -v id="$CID-a" '$1 == id')
	row_b=$(printf '%s\n' "${lines[@]}" | awk -v id="$CID-b" '$1 == id')
	read -r id pid st bundle created owner <<<"$row_a"
	[ "$pid" = "$(container_pid "$CID-a")" ]
	[ "$st" = created ]
	[ "$bundle" = "$BUNDLE" ]
	[[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]]
	[ "$owner" = root ]
	read -r id pid st bundle created owner <<<"$row_b"
	[ "$st" = running ]
}

@test "list -q prints one id per line" {
	set_args sleep 100
	for n in 1 2 3; do
		run brig_detached create "$CID-$n"
		[ "$status" -eq 0 ]
	done
	run brig list -q
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort)" = "$(printf '%s\n' "$CID-1" "$CID-2" "$CID-3")" ]
}

@test "list --quiet is the long form of -q" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig list --quiet
	[ "$status" -eq 0 ]
	[ "$output" = "$CID" ]
}

@test "list -f json prints an array of container states" {
	set_args sleep 100
	run brig_detached create "$CID-a"
	[ "$status" -eq 0 ]
	run brig_detached run -d "$CID-b"
	[ "$status" -eq 0 ]
	wait_for_status "$CID-b" running

	run brig list -f json
	[ "$status" -eq 0 ]
	[ "$(jq -r type <<<"$output")" = array ]
	[ "$(jq length <<<"$output")" -eq 2 ]
	a=$(jq -c --arg id "$CID-a" '.[] | select(.id == $id)' <<<"$output")
	[ "$(jq -r .status <<<"$a")" = created ]
	[ "$(jq -r .pid <<<"$a")" = "$(container_pid "$CID-a")" ]
	[ "$(jq -r .bundle <<<"$a")" = "$BUNDLE" ]
	[ "$(jq -r '.created | type' <<<"$a")" = string ]
	[ "$(jq -r '.owner' <<<"$a")" = root ]
	[ "$(jq -r --arg id "$CID-b" '.[] | select(.id == $id) | .status' <<<"$output")" = running ]
}

@test "list --format table is the default" {
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	run brig list
	table=$output
	run brig list --format table
	[ "$status" -eq 0 ]
	[ "$output" = "$table" ]
}

@test "list shows stopped containers until they are deleted" {
	set_args true
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	run brig list
	[[ "$output" == *"$CID"*stopped* ]]
	brig delete "$CID"
	run brig list -q
	[ -z "$output" ]
}

@test "list with an unknown format fails" {
	run --separate-stderr brig list -f yaml
	assert_one_line_error format brig:yaml
}
