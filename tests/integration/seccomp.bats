#!/usr/bin/env bats
# linux.seccomp: the filter on the container's init and on every exec, the
# two profiles shipped in seccomp-profiles/, and `spec --seccomp`.

load helpers

PROFILES=${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles

# allow_all_but JQ_RULES: a filter that allows everything but the rules
# (written as a jq array expression).
allow_all_but() {
	update_config ".linux.seccomp = {defaultAction: \"SCMP_ACT_ALLOW\", architectures: [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"], syscalls: $1}"
}

@test "an ERRNO rule makes the syscall fail with its errnoRet" {
	allow_all_but '[{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 13}]'
	set_args sh -c 'mkdir /tmp/x 2>&1; grep Seccomp: /proc/self/status'
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs"}]'
	run brig run "$CID"
	[[ "$output" == *"Permission denied"* ]] || fail "output: $output"
	[[ "$output" == *"Seccomp:"*2* ]]
}

@test "a KILL_PROCESS rule kills the process with SIGSYS" {
	allow_all_but '[{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_KILL_PROCESS"}]'
	set_args mkdir /x
	run brig run "$CID"
	[ "$status" -eq $((128 + 31)) ]
}

@test "an argument condition limits a rule to some calls" {
	# personality(0xffffffff) (the query) is allowed, anything else refused.
	allow_all_but '[{names: ["personality"], action: "SCMP_ACT_ERRNO", errnoRet: 1, args: [{index: 0, value: 4294967295, op: "SCMP_CMP_NE"}]}]'
	update_config '.linux.personality = {domain: "LINUX"}'
	set_args sh -c 'echo ran'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
}

@test "every process exec'd into the container gets the filter too" {
	allow_all_but '[{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]'
	set_args sleep 100
	brig_detached run -d "$CID"
	run brig exec "$CID" sh -c 'grep Seccomp: /proc/self/status; mkdir /nope 2>&1; echo rc=$?'
	[[ "$output" == *"Seccomp:"*2* ]] || fail "output: $output"
	[[ "$output" == *"rc=1"* ]]
	[ ! -e "$ROOTFS/nope" ]
}

@test "a syscall this kernel does not know is skipped" {
	allow_all_but '[{names: ["no_such_syscall_ever", "mkdir"], action: "SCMP_ACT_ERRNO"}]'
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
}

@test "an unknown action is one line naming it, and nothing is left" {
	allow_all_but '[{names: ["mkdir"], action: "SCMP_ACT_EXPLODE"}]'
	set_args true
	run --separate-stderr brig run "$CID"
	assert_one_line_error SCMP_ACT_EXPLODE
	assert_no_leftovers "$CID"
}

@test "a NOTIFY rule without a listener is refused" {
	allow_all_but '[{names: ["mkdir"], action: "SCMP_ACT_NOTIFY"}]'
	set_args true
	run --separate-stderr brig run "$CID"
	assert_one_line_error listenerPath
	assert_no_leftovers "$CID"
}

@test "the default profile runs a busybox workload and refuses new user namespaces" {
	update_config '.linux.seccomp = $p' --slurpfile p "$PROFILES/default.json"
	update_config '.linux.seccomp = .linux.seccomp[0]'
	set_args sh -c 'echo hi | sed s/hi/ho/; ls / >/dev/null && echo listed; unshare -U true 2>/dev/null; echo unshare=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = ho ]
	[ "${lines[1]}" = listed ]
	[ "${lines[2]}" = unshare=1 ]
}

@test "the sandbox profile runs a busybox workload and refuses mount and raw sockets" {
	update_config '.linux.seccomp = $p[0]' --slurpfile p "$PROFILES/sandbox.json"
	update_config '.process.capabilities.bounding += ["CAP_SYS_ADMIN", "CAP_NET_RAW"] | .process.capabilities.effective += ["CAP_SYS_ADMIN", "CAP_NET_RAW"] | .process.capabilities.permitted += ["CAP_SYS_ADMIN", "CAP_NET_RAW"]'
	set_args sh -c 'seq 3 | tail -1; mount -t tmpfs t /mnt 2>/dev/null; echo mount=$?; ping -c 1 127.0.0.1 >/dev/null 2>&1; echo ping=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 3 ]
	# Even with the capabilities, the filter says no.
	[ "${lines[1]}" = mount=255 ] || [ "${lines[1]}" != mount=0 ]
	[ "${lines[2]}" != ping=0 ] || fail "a raw socket worked: $output"
}

@test "spec --seccomp writes a config with the profile" {
	rm "$BUNDLE/config.json"
	brig spec --seccomp "$PROFILES/sandbox.json"
	jq -e '.linux.seccomp.defaultAction == "SCMP_ACT_ERRNO" and (.linux.seccomp.syscalls | length) > 10' "$BUNDLE/config.json" >/dev/null
	jq -e '.process.args == ["sh"]' "$BUNDLE/config.json" >/dev/null
}

@test "spec --seccomp merges the profile into an existing config, keeping the rest" {
	update_config '.hostname = "kept"'
	brig spec --seccomp "$PROFILES/default.json"
	jq -e '.hostname == "kept" and .linux.seccomp.defaultAction == "SCMP_ACT_ERRNO"' "$BUNDLE/config.json" >/dev/null
}

@test "spec --seccomp with a profile that does not exist fails and changes nothing" {
	before=$(md5sum <"$BUNDLE/config.json")
	run --separate-stderr brig spec --seccomp "$BATS_TEST_TMPDIR/nope.json"
	assert_one_line_error nope.json
	[ "$(md5sum <"$BUNDLE/config.json")" = "$before" ]
}

@test "features lists the seccomp actions, operators and flags" {
	run brig features
	[ "$status" -eq 0 ]
	jq -e '.linux.seccomp.enabled and (.linux.seccomp.actions | index("SCMP_ACT_NOTIFY")) and (.linux.seccomp.operators | length) == 7 and (.linux.seccomp.knownFlags | index("SECCOMP_FILTER_FLAG_TSYNC"))' <<<"$output" >/dev/null
}
