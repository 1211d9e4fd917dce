#!/usr/bin/env bats
# Every command answers --help with its usage and exits 0.

load helpers

COMMANDS="create start run state kill delete list spec features"

@test "--help lists every command" {
	run brig --help
	[ "$status" -eq 0 ]
	for cmd in $COMMANDS; do
		[[ "$output" == *"$cmd"* ]] || fail "--help does not list $cmd"
	done
	[[ "${output,,}" == *usage* ]]
}

@test "-h is a short form of --help" {
	run brig -h
	[ "$status" -eq 0 ]
	[[ "$output" == *create* ]]
}

@test "--help lists the global flags" {
	run brig --help
	[ "$status" -eq 0 ]
	for flag in --root --log --log-format --debug --systemd-cgroup --version --help; do
		[[ "$output" == *"$flag"* ]] || fail "--help does not list $flag"
	done
}

@test "every command has --help that prints its usage and exits 0" {
	for cmd in $COMMANDS; do
		run brig "$cmd" --help
		[ "$status" -eq 0 ] || fail "$cmd --help exited $status"
		[[ "${output,,}" == *usage* ]] || fail "$cmd --help prints no usage: $output"
		[[ "$output" == *"$cmd"* ]] || fail "$cmd --help does not name the command"
	done
}

@test "run --help documents its flags" {
	run brig run --help
	[ "$status" -eq 0 ]
	for flag in --bundle --detach --pid-file --no-pivot --no-new-keyring --preserve-fds --keep; do
		[[ "$output" == *"$flag"* ]] || fail "run --help does not list $flag"
	done
}

@test "create --help documents its flags" {
	run brig create --help
	[ "$status" -eq 0 ]
	for flag in --bundle --pid-file --console-socket --no-pivot --no-new-keyring --preserve-fds; do
		[[ "$output" == *"$flag"* ]] || fail "create --help does not list $flag"
	done
}

@test "kill, delete, list and spec --help document their flags" {
	run brig kill --help
	[[ "$output" == *--all* ]]
	run brig delete --help
	[[ "$output" == *--force* ]]
	run brig list --help
	[[ "$output" == *--quiet* || "$output" == *-q* ]]
	[[ "$output" == *--format* ]]
	run brig spec --help
	[[ "$output" == *--bundle* ]]
	[[ "$output" == *--rootless* ]]
}

@test "an unknown command fails with an error that names it" {
	run --separate-stderr brig no-such-command
	assert_one_line_error no-such-command
}

@test "an unknown flag fails with an error that names it" {
	run --separate-stderr brig run --no-such-flag "$CID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *no-such-flag* ]]
	# brig-specific: a one-line error, not the usage text.
	is_runc || [ "${#stderr_lines[@]}" -eq 1 ]
}

@test "a command missing its container id fails and says so" {
	for cmd in start state kill delete; do
		run --separate-stderr brig "$cmd"
		[ "$status" -ne 0 ] || fail "$cmd without an id succeeded"
		# brig-specific: one line, no usage dump.
		is_runc || [ "${#stderr_lines[@]}" -eq 1 ] || fail "$cmd: $stderr"
	done
}
