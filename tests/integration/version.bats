#!/usr/bin/env bats
# `brig --version`: what a user checks first after installing.

load helpers

@test "--version prints a version and exits 0" {
	run brig --version
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
}

@test "--version names the OCI runtime spec version it implements" {
	run brig --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ spec:\ 1\.[0-9]+\.[0-9]+ ]]
}

@test "--version starts with the program name" {
	# brig-specific: the first line is "brig version X.Y.Z".
	run brig --version
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^brig\ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
}

@test "-v is a short form of --version" {
	run brig -v
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ version\ [0-9]+\.[0-9]+ ]]
}
