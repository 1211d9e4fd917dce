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

@test "a filter refusing getcwd still lets the process start, in its cwd" {
	allow_all_but '[{names: ["getcwd"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]'
	update_config '.process.cwd = "/bin"'
	set_args sh -c 'ls ./busybox'
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "status $status: $output"
	[ "$output" = ./busybox ]
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

@test "a syscall newer than every one the profile names gets ENOSYS; a known one left out, the default errno" {
	# glibc falls back from clone3, faccessat2 and openat2 on ENOSYS only.
	use_host_usr
	cat >"$ROOTFS/nr.py" <<-'PY'
		import ctypes, sys
		libc = ctypes.CDLL(None, use_errno=True)
		for nr in map(int, sys.argv[1:]):
		    libc.syscall(nr)
		    print(ctypes.get_errno())
	PY
	for profile in default sandbox; do
		update_config '.linux.seccomp = $p[0]' --slurpfile p "$PROFILES/$profile.json"
		# 1000 and 460: past x86_64's table; 246 (kexec_load) in it, refused.
		set_args python3 /nr.py 1000 460 246
		run brig run "$CID"
		[ "$status" -eq 0 ] || fail "$profile: $output"
		[ "$(tr '\n' ' ' <<<"$output")" = "38 38 1 " ] || fail "$profile profile: errnos $output (ENOSYS is 38)"
	done
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

# ----------------------------------------------- actions and operators ----
# python3 from the host (use_host_usr) calls getpgid(PID) for chosen PIDs: a
# harmless syscall whose first argument the test picks. No such process
# exists in the container, so without a rule it fails with ESRCH (3).

write_probe() {
	use_host_usr
	cat >"$ROOTFS/probe.py" <<-'PY'
		import os, signal, sys, threading
		def call(pid):
		    try:
		        os.getpgid(pid)
		        return 0
		    except OSError as e:
		        return e.errno
		mode = sys.argv[1]
		if mode == "ops":
		    print("".join("m" if call(p) == 42 else "-" for p in (99, 100, 101)))
		elif mode == "and":
		    def kill(pid, sig):
		        try:
		            os.kill(pid, sig)
		            return 0
		        except OSError as e:
		            return e.errno
		    print("".join("m" if kill(p, s) == 42 else "-" for p, s in ((100, 0), (100, 15), (101, 0))))
		elif mode == "errno":
		    print(call(100))
		elif mode == "trap":
		    signal.signal(signal.SIGSYS, lambda s, f: print("trapped", flush=True))
		    print("returned", call(100), flush=True)
		elif mode == "thread":
		    # Through ctypes, which lets go of the interpreter lock: a
		    # thread killed while holding it would hang the others.
		    import ctypes
		    def thread():
		        ctypes.CDLL(None).getpgid(100)
		        print("thread went on", flush=True)
		    t = threading.Thread(target=thread)
		    t.start()
		    t.join(2)
		    print("main alive, tasks:", len(os.listdir("/proc/self/task")), flush=True)
		    os._exit(0)
	PY
}

# getpgid_rule ACTION [JQ_FIELDS]: one rule on getpgid in an allow-all filter.
getpgid_rule() {
	allow_all_but "[{names: [\"getpgid\"], action: \"$1\"${2:+, $2}}]"
}

@test "each comparison operator selects the calls it should (NE LT LE EQ GE GT MASKED_EQ)" {
	write_probe
	set_args python3 /probe.py ops
	local op want
	# getpgid(99), (100), (101) against 100: "m" where the rule matched.
	for pair in NE:m-m LT:m-- LE:mm- EQ:-m- GE:-mm GT:--m; do
		op=${pair%%:*} want=${pair#*:}
		getpgid_rule SCMP_ACT_ERRNO "errnoRet: 42, args: [{index: 0, value: 100, op: \"SCMP_CMP_$op\"}]"
		run brig run "$CID"
		[ "$status" -eq 0 ] || fail "$op: $output"
		[ "$output" = "$want" ] || fail "SCMP_CMP_$op: got $output, expected $want"
	done
	# MASKED_EQ: value is the mask, valueTwo the datum: 100 and 101 (0x64,
	# 0x65) & 0xfe == 0x64; 99 (0x63) not.
	getpgid_rule SCMP_ACT_ERRNO 'errnoRet: 42, args: [{index: 0, value: 254, valueTwo: 100, op: "SCMP_CMP_MASKED_EQ"}]'
	run brig run "$CID"
	[ "$output" = "-mm" ] || fail "SCMP_CMP_MASKED_EQ: got $output"
}

@test "conditions on two arguments must both hold" {
	write_probe
	set_args python3 /probe.py and
	# kill(PID, SIG) for (100, 0), (100, 15), (101, 0): only the first
	# matches pid == 100 and sig == 0.
	allow_all_but '[{names: ["kill"], action: "SCMP_ACT_ERRNO", errnoRet: 42, args: [{index: 0, value: 100, op: "SCMP_CMP_EQ"}, {index: 1, value: 0, op: "SCMP_CMP_EQ"}]}]'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "m--" ]
}

@test "SCMP_ACT_KILL and SCMP_ACT_KILL_THREAD kill the calling thread only" {
	write_probe
	set_args python3 /probe.py thread
	for action in SCMP_ACT_KILL SCMP_ACT_KILL_THREAD; do
		getpgid_rule "$action"
		run brig run "$CID"
		[ "$status" -eq 0 ] || fail "$action: status $status: $output"
		# The thread died in the syscall, the process went on.
		[ "$output" = "main alive, tasks: 1" ] || fail "$action: $output"
	done
}

@test "SCMP_ACT_KILL_PROCESS from a thread kills the whole process" {
	write_probe
	set_args python3 /probe.py thread
	getpgid_rule SCMP_ACT_KILL_PROCESS
	run brig run "$CID"
	[ "$status" -eq $((128 + 31)) ]
	[ -z "$output" ]
}

@test "SCMP_ACT_TRAP delivers a SIGSYS the process can handle" {
	write_probe
	set_args python3 /probe.py trap
	getpgid_rule SCMP_ACT_TRAP
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = trapped ]
	[[ "${lines[1]}" == returned* ]]
}

@test "SCMP_ACT_TRACE without a tracer fails the syscall with ENOSYS" {
	write_probe
	set_args python3 /probe.py errno
	getpgid_rule SCMP_ACT_TRACE 'errnoRet: 7'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = 38 ]
}

@test "SCMP_ACT_LOG and SCMP_ACT_ALLOW let the syscall run" {
	write_probe
	set_args python3 /probe.py errno
	getpgid_rule SCMP_ACT_LOG
	run brig run "$CID"
	[ "$output" = 3 ]
	# ALLOW in a deny-by-default filter: getpgid is let through by its
	# own rule, and the default refuses with defaultErrnoRet.
	update_config '.linux.seccomp = $p[0]' --slurpfile p "$PROFILES/default.json"
	update_config '.linux.seccomp.syscalls[0].names -= ["getpgid", "rmdir", "unlinkat"]
		| .linux.seccomp.syscalls += [{names: ["getpgid"], action: "SCMP_ACT_ALLOW"}]
		| .linux.seccomp.defaultErrnoRet = 95'
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs"}]'
	set_args sh -c 'python3 /probe.py errno; mkdir /tmp/d; rmdir /tmp/d 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "${lines[0]}" = 3 ]
	[[ "${lines[1]}" == *"not supported"* ]] || fail "rmdir: ${lines[1]}"
	[ "${lines[2]}" = rc=1 ]
}

@test "a rule naming several syscalls applies to each of them" {
	allow_all_but '[{names: ["mkdir", "mkdirat", "rmdir", "symlink", "symlinkat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]'
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["mode=1777"]}]'
	set_args sh -c 'mkdir /tmp/x; rmdir /tmp/none; ln -s a /tmp/l; touch /tmp/ok && echo touched'
	run brig run "$CID"
	# Without the rule, rmdir would say "No such file or directory".
	[ "$(grep -c "Operation not permitted" <<<"$output")" -eq 3 ] || fail "$output"
	[ "${lines[3]}" = touched ]
}

@test "every filter flag is accepted and the filter still applies (TSYNC, LOG, SPEC_ALLOW)" {
	set_args sh -c 'mkdir /x 2>/dev/null; echo mkdir=$?; grep Speculation_Store_Bypass /proc/self/status'
	for flag in SECCOMP_FILTER_FLAG_TSYNC SECCOMP_FILTER_FLAG_LOG SECCOMP_FILTER_FLAG_SPEC_ALLOW; do
		allow_all_but '[{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]'
		update_config '.linux.seccomp.flags = [$f]' --arg f "$flag"
		run brig run "$CID"
		[ "$status" -eq 0 ] || fail "$flag: $output"
		[ "${lines[0]}" = mkdir=1 ] || fail "$flag: $output"
	done
	# SPEC_ALLOW: the filter did not force the store-bypass mitigation on.
	[[ "${lines[1]}" != *"force mitigated"* ]] || fail "$output"
}

@test "an unknown flag is refused; WAIT_KILLABLE_RECV without a notify rule is left out" {
	allow_all_but '[{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO"}]'
	update_config '.linux.seccomp.flags = ["SECCOMP_FILTER_FLAG_BOGUS"]'
	set_args sh -c 'mkdir /x 2>/dev/null; echo mkdir=$?'
	run --separate-stderr brig run "$CID"
	assert_one_line_error SECCOMP_FILTER_FLAG_BOGUS
	assert_no_leftovers "$CID"
	# The kernel knows this flag only with a listener: without one, the
	# filter is loaded without it (one profile for every container).
	update_config '.linux.seccomp.flags = ["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = mkdir=1 ]
}

# ------------------------------------------------------------- notify ----
# tests/tools/seccomp-agent answers notified syscalls and records the
# container process state it was sent.

SECCOMP_AGENT=${SECCOMP_AGENT:-$(dirname "$BRIG")/tests/tools/seccomp-agent}

# start_agent ANSWER...: the agent on $AGENT_SOCK; its answers go to
# $AGENT_LOG, the states it got to $AGENT_STATES.
start_agent() {
	[ -x "$SECCOMP_AGENT" ] || fail "no seccomp-agent at $SECCOMP_AGENT (make builds it)"
	AGENT_SOCK=$BATS_TEST_TMPDIR/agent.sock
	AGENT_LOG=$BATS_TEST_TMPDIR/agent.log
	AGENT_STATES=$BATS_TEST_TMPDIR/agent.states
	"$SECCOMP_AGENT" "$AGENT_SOCK" "$AGENT_STATES" "$@" >"$AGENT_LOG" 2>&1 3>&- &
	AGENT_PID=$!
	for _ in $(seq 50); do
		[ -S "$AGENT_SOCK" ] && break
		sleep 0.1
	done
	[ -S "$AGENT_SOCK" ] || fail "seccomp-agent did not listen: $(cat "$AGENT_LOG")"
	update_config '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $s,
		listenerMetadata: $m, syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_NOTIFY"}]}' \
		--arg s "$AGENT_SOCK" --arg m "meta-$MARK"
}

teardown() {
	[ -z "${AGENT_PID:-}" ] || kill "$AGENT_PID" 2>/dev/null || true
	teardown_bundle
}

@test "NOTIFY: the listener gets the notify fd and the container's state, and its errno answer is the syscall's" {
	start_agent mkdir=errno:13 mkdirat=errno:13
	set_args sh -c 'mkdir /a 2>&1; echo rc=$?; sleep 100'
	brig_detached run -d "$CID"
	wait_for_line "$CT_OUT" rc=1
	grep -q "Permission denied" "$CT_OUT"
	[ ! -e "$ROOTFS/a" ]
	grep -Eq '^mkdir(at)? errno:13$' "$AGENT_LOG"
	# The runtime-spec's container process state, one line per process.
	local pid
	pid=$(container_pid "$CID")
	jq -e --arg id "$CID" --arg m "meta-$MARK" --argjson pid "$pid" \
		'.ociVersion != null and .fds == ["seccompFd"] and .pid == $pid
		 and .metadata == $m and .state.id == $id and .state.pid == $pid
		 and (.state.bundle | length) > 0' "$AGENT_STATES"
}

@test "NOTIFY: an answer of success skips the syscall, CONTINUE lets it run" {
	start_agent mkdir=ok mkdirat=ok
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs"}]'
	set_args sh -c 'mkdir /tmp/a && echo made; ls -d /tmp/a 2>/dev/null || echo absent'
	run brig run "$CID"
	[ "$output" = "made
absent" ]
	kill "$AGENT_PID"
	wait "$AGENT_PID" || true
	rm -f "$AGENT_SOCK"
	start_agent mkdir=continue mkdirat=continue
	update_config '.mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs"}]'
	run brig run "$CID"
	[ "$output" = "made
/tmp/a" ]
}

@test "NOTIFY: every exec'd process reaches the listener too, with WAIT_KILLABLE_RECV" {
	start_agent mkdir=errno:28 mkdirat=errno:28
	update_config '.linux.seccomp.flags = ["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]'
	set_args sleep 100
	brig_detached run -d "$CID"
	run brig exec "$CID" sh -c 'mkdir /b 2>&1'
	[[ "$output" == *"No space left"* ]] || fail "$output"
	[ "$(wc -l <"$AGENT_STATES")" -eq 2 ]
	tail -1 "$AGENT_STATES" | jq -e --arg id "$CID" '.state.id == $id and .state.status == "running"'
}
