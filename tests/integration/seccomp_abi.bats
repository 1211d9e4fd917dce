#!/usr/bin/env bats
# The 32-bit syscall entry (int $0x80) from a 64-bit process: the default
# profile lets it through, the sandbox profile kills it. The development and
# CI hosts' kernels have no i386 entry at all, so `make check` runs this
# file in the test VM, whose Debian kernel has IA32 emulation; the unit test
# it drives (tests/unit/test_seccomp) loads both profiles' filters there.

load helpers

@test "seccomp: default.json allows the i386 entry, sandbox.json kills it" {
	local top=${top_srcdir:-$BATS_TEST_DIRNAME/../..}
	run env BRIG_TEST_SECCOMP_ONLY=compat-abi top_srcdir="$top" "$top/tests/unit/test_seccomp"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "ok 1 - default.json: the i386 ABI works" <<<"$output"
	grep -qx "ok 2 - sandbox.json: the i386 ABI is killed" <<<"$output"
}
