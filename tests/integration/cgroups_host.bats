#!/usr/bin/env bats
# On a host whose cgroup v2 hierarchy lacks a controller (a hybrid host,
# like the development and CI machines), a limit that needs it is refused by
# name. `make check` runs this file on the host itself, never in the VM.

load helpers

@test "on a host without the memory controller, a memory limit is an error naming it" {
	# A host with the memory controller enforces the limit instead
	# (cgroups_limits.bats): then there is no refusal to check.
	has_controller memory && skip "this host has the memory controller"
	update_config '.linux.resources.memory = {limit: 33554432}'
	set_args true
	run --separate-stderr brig run "$CID"
	assert_one_line_error memory
	assert_no_leftovers "$CID"
}
