#!/usr/bin/env bats
# The 32-bit syscall entry (int $0x80) from a 64-bit process: the default
# profile lets it through, the sandbox profile kills it. The development and
# CI hosts' kernels have no i386 entry at all (any int $0x80 dies of
# SIGSEGV there, filtered or not), so `make check` runs this file in the
# test VM, whose Debian kernel has IA32 emulation.

# shellcheck disable=SC2016 # jq programs and scripts for the container
load helpers

PROFILES=${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles

setup() {
	setup_bundle
	[ "$(uname -m)" = x86_64 ] || fail "seccomp_abi.bats: int \$0x80 is x86's"
	use_host_usr
	# getpid (20 on i386) through the 32-bit entry, from code made
	# executable at run time, with the host's python3 bound in read-only.
	cat >"$ROOTFS/i386.py" <<-'PY'
		import ctypes, mmap
		code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])  # mov eax,20; int 0x80; ret
		m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
		m.write(code)
		f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
		print("returned", f(), flush=True)
	PY
	set_args python3 /i386.py
}

use_profile() {
	update_config '.linux.seccomp = $p[0]' --slurpfile p "$PROFILES/$1"
}

@test "sandbox.json: a 32-bit (int 0x80) syscall kills the process" {
	use_profile sandbox.json
	run brig run "$CID"
	[ "$status" -eq $((128 + 31)) ] || fail "status $status: $output"
	[[ "$output" != *returned* ]]
}

@test "default.json: a 32-bit (int 0x80) getpid returns the container's pid" {
	use_profile default.json
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "status $status: $output"
	grep -qx "returned 1" <<<"$output"
}

@test "seccomp filters compiled by libcontainer: default.json allows the i386 entry, sandbox.json kills it" {
	local top=${top_srcdir:-$BATS_TEST_DIRNAME/../..}
	run env BRIG_TEST_SECCOMP_ONLY=compat-abi top_srcdir="$top" "$top/tests/unit/test_seccomp"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "ok 1 - default.json: the i386 ABI works" <<<"$output"
	grep -qx "ok 2 - sandbox.json: the i386 ABI is killed" <<<"$output"
}
