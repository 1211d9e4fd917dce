#!/usr/bin/env bats
# The seccomp profiles shipped in seccomp-profiles/: what each must refuse is
# refused by the filter (not merely by a missing capability), and ordinary
# Python, bash and busybox work still runs under them.
#
# The probe is python3 from the host (its /usr bound read-only into the
# busybox image) calling raw syscalls through ctypes, with x86-64 syscall
# numbers. The test copies of the profiles answer with an errno nothing else
# returns (defaultErrnoRet 133, EHWPOISON), so a refusal by the filter can't
# be mistaken for the kernel's own EPERM.

# shellcheck disable=SC2016 # jq programs and scripts for the container
load helpers

PROFILES=${top_srcdir:-$BATS_TEST_DIRNAME/../..}/seccomp-profiles
FILTERED=133

setup() {
	setup_bundle
	[ "$(uname -m)" = x86_64 ] || fail "profiles.bats: the probe's syscall numbers are x86-64's"
	use_host_usr
	cat >"$ROOTFS/probe.py" <<-'PY'
		# probe.py NAME...: "NAME ERRNO" for each syscall (0: it succeeded).
		import ctypes, os, sys
		libc = ctypes.CDLL(None, use_errno=True)
		buf = ctypes.create_string_buffer(512)
		b = ctypes.addressof(buf)
		CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x20000, 17
		PROBES = {
		    "ptrace": (101, 16, 1, 0, 0),            # PTRACE_ATTACH to pid 1
		    "process_vm_readv": (310, 1, b, 1, b, 1, 0),
		    "pidfd_getfd": (438, 0, 0, 0),
		    "kcmp": (312, 1, 1, 0, 0, 0),
		    "mount": (165, 0, b, 0, 0, 0),
		    "umount2": (166, b, 0),
		    "pivot_root": (155, b, b),
		    "chroot": (161, b),
		    "bpf": (321, 0, 0, 0),
		    "perf_event_open": (298, 0, 0, -1, -1, 0),
		    "keyctl": (250, 0, 0, 0, 0, 0),
		    "add_key": (248, 0, 0, 0, 0, 0),
		    "request_key": (249, 0, 0, 0, 0),
		    "kexec_load": (246, 0, 0, 0, 0),
		    "kexec_file_load": (320, -1, -1, 0, 0, 0),
		    "init_module": (175, 0, 0, 0),
		    "finit_module": (313, -1, 0, 0),
		    "delete_module": (176, 0, 0),
		    "userfaultfd": (323, 0),
		    "unshare_user": (272, CLONE_NEWUSER),
		    "unshare_mnt": (272, CLONE_NEWNS),
		    "setns": (308, -1, 0),
		    "clone_newuser": (56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
		    "clone3": (435, 0, 0),
		    "open_by_handle_at": (304, -1, 0, 0),
		    "name_to_handle_at": (303, -1, 0, 0, 0, 0),
		    "personality_noaslr": (135, 0x0040000),
		    "socket_raw": (41, 2, 3, 1),            # AF_INET, SOCK_RAW, ICMP
		    "socket_packet": (41, 17, 3, 0),        # AF_PACKET, SOCK_RAW
		    "socket_vsock": (41, 40, 1, 0),
		    "socket_alg": (41, 38, 5, 0),
		    "io_uring_setup": (425, 1, 0),
		    "io_uring_enter": (426, -1, 0, 0, 0, 0, 0),
		    "io_uring_register": (427, -1, 0, 0, 0),
		    "reboot": (169, 0, 0, 0, 0),
		    "swapon": (167, b, 0),
		    "settimeofday": (164, 0, 0),
		    "clock_settime": (227, 0, 0),
		    "syslog": (103, 3, b, 16),              # SYSLOG_ACTION_READ_ALL
		    "acct": (163, 0),
		    "modify_ldt": (154, 0, b, 16),
		    "iopl": (172, 3),
		    "ioperm": (173, 0, 1, 1),
		    "quotactl": (179, 0, 0, 0, 0),
		    "fanotify_init": (300, 0, 0),
		    "sethostname": (170, b, 1),
		    "vhangup": (153,),
		    "move_pages": (279, 0, 0, 0, 0, 0, 0),
		    "mbind": (237, 0, 0, 0, 0, 0, 0),
		    # allowed by both profiles
		    "getpid": (39,),
		    "socket_tcp": (41, 2, 1, 0),
		    "socket_unix": (41, 1, 1, 0),
		    "personality_query": (135, 0xffffffff),
		}
		for name in sys.argv[1:]:
		    nr, *args = PROBES[name]
		    ctypes.set_errno(0)
		    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
		    if r == 0 and nr == 56:
		        os._exit(0)                         # a child: only if clone worked
		    print(name, ctypes.get_errno() if r == -1 else 0, flush=True)
	PY
}

# use_profile FILE: the profile as linux.seccomp, answering $FILTERED.
use_profile() {
	update_config '.linux.seccomp = ($p[0] | .defaultErrnoRet = 133)' --slurpfile p "$PROFILES/$1"
}

# assert_filtered NAME...: after running the probe, each NAME got $FILTERED.
assert_filtered() {
	local name got
	for name in "$@"; do
		got=$(awk -v n="$name" '$1 == n {print $2}' <<<"$output")
		[ "$got" = "$FILTERED" ] || fail "$name: errno '$got', expected the filter's $FILTERED"
	done
}

# assert_not_filtered NAME...: each NAME reached the kernel.
assert_not_filtered() {
	local name got
	for name in "$@"; do
		got=$(awk -v n="$name" '$1 == n {print $2}' <<<"$output")
		if [ -z "$got" ] || [ "$got" = "$FILTERED" ]; then
			fail "$name: errno '$got', expected the kernel's answer"
		fi
	done
}

SANDBOX_REFUSES="ptrace process_vm_readv pidfd_getfd kcmp mount umount2 pivot_root chroot bpf
	perf_event_open keyctl add_key request_key kexec_load kexec_file_load init_module
	finit_module delete_module userfaultfd unshare_user unshare_mnt setns clone_newuser
	open_by_handle_at name_to_handle_at personality_noaslr socket_raw socket_packet
	socket_vsock socket_alg io_uring_setup io_uring_enter io_uring_register reboot swapon
	settimeofday clock_settime syslog acct modify_ldt iopl ioperm quotactl fanotify_init
	sethostname vhangup move_pages mbind"

@test "sandbox.json: every class it must block is refused by the filter, even with the capabilities" {
	use_profile sandbox.json
	# The capabilities these syscalls check: what fails now fails because
	# of the filter.
	update_config '.process.capabilities |= with_entries(.value += $caps)' --argjson caps '[
		"CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_NET_RAW", "CAP_SYS_MODULE", "CAP_SYS_BOOT",
		"CAP_SYS_TIME", "CAP_SYSLOG", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_DAC_READ_SEARCH",
		"CAP_SYS_PACCT", "CAP_SYS_NICE", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_TTY_CONFIG"]'
	# shellcheck disable=SC2086 # one name per word
	set_args python3 /probe.py $SANDBOX_REFUSES clone3 getpid socket_tcp socket_unix personality_query
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	# shellcheck disable=SC2086
	assert_filtered $SANDBOX_REFUSES
	# clone3 says ENOSYS, so C libraries fall back to the filtered clone.
	[ "$(awk '$1 == "clone3" {print $2}' <<<"$output")" = 38 ]
	grep -qx "getpid 0" <<<"$output"
	grep -qx "socket_tcp 0" <<<"$output"
	grep -qx "socket_unix 0" <<<"$output"
	grep -qx "personality_query 0" <<<"$output"
}

@test "default.json: administration of the host is refused by the filter; tracing and raw sockets are left to capabilities" {
	use_profile default.json
	set_args python3 /probe.py mount umount2 pivot_root bpf perf_event_open keyctl add_key \
		kexec_load init_module userfaultfd unshare_user setns clone_newuser open_by_handle_at \
		socket_vsock io_uring_setup reboot settimeofday syslog acct clone3 \
		ptrace socket_raw getpid socket_tcp
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_filtered mount umount2 pivot_root bpf perf_event_open keyctl add_key kexec_load \
		init_module userfaultfd unshare_user setns clone_newuser open_by_handle_at socket_vsock \
		io_uring_setup reboot settimeofday syslog acct
	[ "$(awk '$1 == "clone3" {print $2}' <<<"$output")" = 38 ]
	# The default profile lets these reach the kernel, whose capability
	# checks answer (CAP_SYS_PTRACE, CAP_NET_RAW are not granted).
	assert_not_filtered ptrace socket_raw
	grep -qx "getpid 0" <<<"$output"
	grep -qx "socket_tcp 0" <<<"$output"
}

# The 32-bit entry (int $0x80) is tested in seccomp_abi.bats, in the VM:
# the hosts' kernels have none.

@test "sandbox.json: a Python, bash and busybox workload runs as a non-root user" {
	use_profile sandbox.json
	update_config '.process.user = {uid: 1000, gid: 1000} | .process.noNewPrivileges = true
		| .process.capabilities = {} | .process.cwd = "/tmp"
		| .process.env += ["HOME=/tmp"]
		| .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["mode=1777"]}]'
	cat >"$ROOTFS/work.py" <<-'PY'
		import hashlib, json, os, socket, subprocess, sys, tempfile, threading
		from concurrent.futures import ThreadPoolExecutor
		# threads, files, hashing, json
		with ThreadPoolExecutor(4) as ex:
		    sums = list(ex.map(lambda i: hashlib.sha256(str(i).encode()).hexdigest()[:4], range(8)))
		with tempfile.NamedTemporaryFile("w+", dir="/tmp") as f:
		    json.dump({"sums": sums}, f)
		    f.flush()
		    f.seek(0)
		    assert json.load(f)["sums"] == sums
		# a TCP server and client on loopback
		srv = socket.socket()
		srv.bind(("127.0.0.1", 0))
		srv.listen(1)
		def serve():
		    c, _ = srv.accept()
		    c.sendall(c.recv(5).upper())
		    c.close()
		t = threading.Thread(target=serve)
		t.start()
		cl = socket.create_connection(srv.getsockname())
		cl.sendall(b"hello")
		reply = cl.recv(5)
		t.join()
		# child processes (fork/exec through subprocess), a pipe
		out = subprocess.run(["sh", "-c", "echo piped | tr a-z A-Z"], capture_output=True, text=True).stdout
		print("python", reply.decode(), out.strip(), os.getuid())
	PY
	set_args sh -c '
		python3 /work.py
		bash -c "declare -A m=([a]=1 [b]=2); s=0; for k in \"\${!m[@]}\"; do s=\$((s + m[\$k])); done; echo bash \$s \$(echo sub) \$BASH_VERSINFO" 
		seq 1000 | sort -rn | head -1 | xargs -I{} echo busybox {}
		mkdir -p /tmp/t/a && echo x >/tmp/t/a/f && tar -C /tmp -cf /tmp/t.tar t && tar -tf /tmp/t.tar | wc -l
		(sleep 0.1 & wait) && echo jobs'
	run brig run "$CID"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "python HELLO PIPED 1000" ]
	[[ "${lines[1]}" == "bash 3 sub "[0-9]* ]]
	[ "${lines[2]}" = "busybox 1000" ]
	[ "${lines[3]}" = 3 ]
	[ "${lines[4]}" = jobs ]
}

@test "default.json: the same workload runs as root" {
	use_profile default.json
	set_args sh -c 'python3 -c "import subprocess, threading; t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join(); print(subprocess.check_output([\"echo\", \"child\"]).decode().strip())"; bash -c "echo bash \$((6 * 7))"'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "thread
child
bash 42" ]
}

@test "the profiles keep the usual container default's refusals (compare-profiles.sh)" {
	run "$PROFILES/compare-profiles.sh"
	echo "$output"
	[ "$status" -eq 0 ]
}
