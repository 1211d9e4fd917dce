#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# `brig sandbox` and the sandbox profile, as a user drives them and as code
# inside a sandbox attacks it. Needs the sandbox tree (`make rootfs`, at
# /var/lib/brig/rootfs or $BRIG_SANDBOX_ROOTFS), brig-init (next to brig or
# $BRIG_INIT), loop devices, ext4, and the memory, pids and cpu controllers
# (cgroup v2, or v1 hierarchies): `make check` runs this file on the host
# and in the test VM, so both layouts are covered. Each command costs
# seconds in the VM, so one sandbox (s1, with two services) serves most
# tests.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}

setup_file() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || return 0
	sandbox_file_env
	export SB_HOST=$BATS_FILE_TMPDIR/host
	mkdir -p "$SB_HOST"
	cat >"$SB_HOST/services.conf" <<-'EOF'
		[program:idle]
		command = sleep 100000
		[program:crasher]
		command = sh -c 'echo run >>/tmp/crasher.log; sleep 0.5; exit 3'
		autorestart = true
		startsecs = 0
		startretries = 1000
	EOF
	timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --rootfs "$ROOTFS_TREE" \
		--services "$SB_HOST/services.conf" s1 >"$SB_HOST/create.out" 2>&1 || true
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in s1 s2 g1 g2 g3; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	stop_file_proxies
}

setup() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -x "$BRIG_INIT" ] || fail "no brig-init at $BRIG_INIT: build it or set BRIG_INIT"
	"$BRIG" --root "$SB_ROOT" state s1 >/dev/null 2>&1 || fail "sandbox s1 did not start: $(cat "$SB_HOST/create.out")"
}

teardown() {
	:
}

# in_s1 SHELL_PROGRAM: runs it in s1 as the sandbox user.
in_s1() {
	sb exec s1 -- sh -c "$1"
}

@test "sandbox exec: python3 runs as the non-root user in /mnt/data" {
	run sb exec s1 -- python3 -c 'import os; print(2+2, os.getuid(), os.getgid(), os.getcwd())'
	[ "$status" -eq 0 ]
	[ "$output" = "4 1000 1000 /mnt/data" ]
	run sb ls
	[ "$status" -eq 0 ]
	echo "$output" | grep -Eq '^s1 +running +[0-9]+[smhd] +- +[0-9.]+[BKM]/[0-9.]+G$'
}

@test "sandbox: the root is read-only, /mnt/data /tmp and home are writable" {
	run in_s1 'touch /usr/x'
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	run in_s1 'echo a >/mnt/data/w && echo b >/tmp/w && echo c >$HOME/w && cat /mnt/data/w /tmp/w $HOME/w'
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "a b c" ]
	[ ! -e "$ROOTFS_TREE/usr/x" ]
}

@test "sandbox: no capabilities, no_new_privs, seccomp, masked /proc" {
	# A masked file is /dev/null (char 1:3) mounted over it. Some kernels
	# are built without /proc/kcore (this CI host's), so it is checked where
	# it exists; /proc/keys is in every kernel the suite runs on.
	run in_s1 'grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status
		for f in /proc/keys /proc/kcore; do [ ! -e $f ] || stat -c "%n %t:%T" $f; done'
	masked="/proc/keys 1:3"
	[ ! -e /proc/kcore ] || masked="$masked /proc/kcore 1:3"
	[ "$(squeeze "$output")" = "CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 $masked" ]
}

@test "sandbox: an exec whose process asks for root, capabilities and its own LD_PRELOAD gets the sandbox's all the same" {
	cat >"$SB_HOST/root.json" <<-'EOF'
		{"args": ["sh", "-c", "id -u; id -g; id -G; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; echo $LD_PRELOAD; ulimit -n; pwd"],
		 "cwd": "/tmp", "user": {"uid": 0, "gid": 0, "additionalGids": [4, 27]},
		 "env": ["PATH=/usr/bin:/bin", "LD_PRELOAD=/tmp/mine.so"],
		 "capabilities": {"bounding": ["CAP_SYS_ADMIN", "CAP_CHOWN"], "effective": ["CAP_SYS_ADMIN"],
		                  "permitted": ["CAP_SYS_ADMIN"]},
		 "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
		 "noNewPrivileges": false}
	EOF
	run timeout 60 "$BRIG" --root "$SB_ROOT" exec --process "$SB_HOST/root.json" s1
	[ "$status" -eq 0 ] || fail "exec: $output"
	[ "$(squeeze "$output")" = "1000 1000 1000 CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 1024 /tmp" ]
	# The same through plain `brig exec` flags asking for more.
	run timeout 60 "$BRIG" --root "$SB_ROOT" exec --user 0:0 --cap CAP_SYS_ADMIN s1 sh -c 'id -u; grep ^CapEff: /proc/self/status'
	[ "$status" -eq 0 ] || fail "exec: $output"
	[ "$(squeeze "$output")" = "1000 CapEff: 0000000000000000" ]
	run sb exec -u 0 s1 -- true
	[ "$status" -eq 1 ]
	[[ "$output" == *"runs every process as its user sandbox"* ]]
	[ "${#lines[@]}" -eq 1 ]
}

@test "sandbox: loopback only, and connecting out fails" {
	run in_s1 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	[ "$output" = "lo" ]
	run sb exec s1 -- python3 -c '
import socket
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("192.0.2.1", 80)); print("connected")
except OSError as e:
    print("refused", e.errno)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(); c = socket.create_connection(l.getsockname()); print("lo ok")'
	[ "$status" -eq 0 ]
	[[ "$output" == "refused "* ]]
	[[ "$output" == *"lo ok" ]]
}

@test "sandbox: brig-init is PID 1 with its services; a crashed service restarts; a zombie is reaped" {
	run in_s1 'for p in /proc/[0-9]*; do printf "%s %s\n" "${p#/proc/}" "$(tr "\0" " " <$p/cmdline)"; done'
	echo "$output" | grep -q '^1 /usr/sbin/brig-init --exec-port $'
	echo "$output" | grep -q ' sleep 100000 $'
	# The crasher exits every half second and is started again.
	for _ in $(seq 30); do
		[ "$(in_s1 'cat /tmp/crasher.log | wc -l')" -ge 3 ] && break
		sleep 1
	done
	[ "$(in_s1 'cat /tmp/crasher.log | wc -l')" -ge 3 ]
	# An orphan (its parent exits at once) is adopted by PID 1 and reaped.
	# (python3, so that no service's process can be taken for it: the
	# crasher and its sleep die twice a second, each a zombie for a moment.)
	in_s1 '(python3 -c "import time; time.sleep(1)" &) ; true'
	sleep 3
	run in_s1 'cat /proc/[0-9]*/stat 2>/dev/null | grep -c "(python3) Z" || true'
	[ "$output" = 0 ]
}

@test "sandbox: LD_PRELOAD and MALLOC_CONF are the same in init, a service and an exec, and jemalloc is loaded" {
	init_env=$(in_s1 'tr "\0" "\n" </proc/1/environ | grep -E "^(LD_PRELOAD|MALLOC_CONF)=" | sort')
	svc_env=$(in_s1 'for p in /proc/[0-9]*; do [ "$(tr "\0" " " <$p/cmdline 2>/dev/null)" = "sleep 100000 " ] && tr "\0" "\n" <$p/environ; done | grep -E "^(LD_PRELOAD|MALLOC_CONF)=" | sort')
	exec_env=$(in_s1 'env | grep -E "^(LD_PRELOAD|MALLOC_CONF)=" | sort')
	[ "$init_env" = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
MALLOC_CONF=narenas:1,lg_tcache_max:10,dirty_decay_ms:5000,muzzy_decay_ms:5000" ]
	[ "$svc_env" = "$init_env" ]
	[ "$exec_env" = "$init_env" ]
	run sb exec s1 -- python3 -c 'print(sum("libjemalloc" in l for l in open("/proc/self/maps")) > 0)'
	[ "$output" = True ]
}

@test "sandbox exec --timeout kills the whole process group and exits 124" {
	run sb exec --timeout 3s s1 -- sh -c 'sleep 1001 & sleep 1002'
	[ "$status" -eq 124 ]
	sleep 1
	run in_s1 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " " | grep -c "sleep 100[12]" || true'
	[ "$output" = 0 ]
}

# What a process sees of itself, to compare the two ways an exec starts.
SELF_VIEW='grep -E "^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp|Seccomp_filters|SigBlk|SigIgn|SigCgt):" /proc/self/status
umask; ulimit -a; pwd; env | sort; cat /proc/self/cgroup /proc/self/oom_score_adj
for n in /proc/self/ns/*; do readlink "$n"; done; ls /proc/self/fd; ps -o pgid= -o sid= -p $$ | awk "{print (\$1 == \$2)}"'

@test "sandbox exec: the init starts the process, which gets what the classic exec gives" {
	# brig-init (PID 1) is the parent; with --user, the classic way, the
	# process comes from outside the sandbox's pid namespace (PPID 0).
	run sb exec s1 -- sh -c 'echo $PPID'
	[ "$output" = 1 ]
	run sb exec --user sandbox s1 -- sh -c 'echo $PPID'
	[ "$output" = 0 ]
	for opts in "" "--cwd /tmp -e FOO=bar -e PATH=/bin:/usr/bin -e LD_PRELOAD=/x -e HOME=/tmp"; do
		# shellcheck disable=SC2086 # the options are words
		port=$(sb exec $opts s1 -- sh -c "$SELF_VIEW")
		# shellcheck disable=SC2086
		classic=$(sb exec --user sandbox $opts s1 -- sh -c "$SELF_VIEW")
		[ "$port" = "$classic" ] || fail "with '$opts': $(diff <(echo "$classic") <(echo "$port"))"
	done
	[[ "$port" == *"FOO=bar"* && "$port" == *"PWD=/tmp"* ]]
	[[ "$port" == *"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"* ]]
	[[ "$port" == *"Seccomp:	2"* && "$port" == *"CapEff:	0000000000000000"* ]]
}

@test "sandbox exec: statuses, a missing command, a bad cwd and stdin, both ways alike" {
	for way in "" "--user sandbox"; do
		# shellcheck disable=SC2086
		run sb exec $way s1 -- sh -c 'exit 7'
		[ "$status" -eq 7 ]
		# shellcheck disable=SC2086
		run sb exec $way s1 -- sh -c 'kill -9 $$'
		[ "$status" -eq 137 ]
		# shellcheck disable=SC2086
		run sb exec $way s1 -- no-such-command
		[ "$status" -ne 0 ]
		[ "$output" = "brig: sandbox exec: exec \`no-such-command\`: executable file not found in \$PATH" ]
		# shellcheck disable=SC2086
		run sb exec $way s1 -- /no/such
		[ "$status" -ne 0 ]
		[ "$output" = "brig: sandbox exec: exec \`/no/such\`: no such file or directory" ]
		# shellcheck disable=SC2086
		run sb exec $way s1 -- /tmp
		[ "$status" -ne 0 ]
		[ "$output" = "brig: sandbox exec: exec \`/tmp\`: permission denied" ]
		# shellcheck disable=SC2086
		run sb exec $way --cwd /no/such s1 -- true
		[ "$status" -ne 0 ]
		[[ "$output" == "brig: sandbox exec: chdir to cwd \`/no/such\`: "*"No such file or directory" ]]
		# shellcheck disable=SC2086
		run bash -c "printf 'in\nput\n' | timeout 60 '$BRIG' --root '$SB_ROOT' sandbox exec $way s1 -- sh -c 'cat; echo err >&2'"
		[ "$status" -eq 0 ]
		[ "$output" = "in
put
err" ]
	done
}

@test "sandbox exec: a signal to brig reaches the process the init started" {
	in_s1 'rm -f /tmp/trapped'
	"$BRIG" --root "$SB_ROOT" sandbox exec s1 -- sh -c 'trap "exit 42" TERM; touch /tmp/trapped; while :; do sleep 0.1; done' &
	pid=$!
	for _ in $(seq 100); do
		in_s1 'test -e /tmp/trapped' && break
		sleep 0.2
	done
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" -eq 42 ]
}

@test "sandbox exec: the init refuses malformed requests on its port whole, and goes on serving" {
	pid=$("$BRIG" --root "$SB_ROOT" state s1 | jq -r .pid)
	# The host's end of the port, taken as brig takes it; each request
	# carries an answer socket and three stdio fds, or fewer.
	run python3 - "$pid" <<-'EOF'
		import ctypes, os, socket, struct, sys
		libc = ctypes.CDLL(None, use_errno=True)
		pidfd = os.pidfd_open(int(sys.argv[1]))
		port = socket.socket(fileno=libc.syscall(438, pidfd, 3, 0))  # pidfd_getfd
		null = os.open("/dev/null", os.O_RDWR)
		def ask(body, n_fds=4):
		    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
		    fds = [theirs.fileno(), null, null, null][:n_fds]
		    port.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
		    theirs.close()
		    mine.settimeout(20)
		    try:
		        a = mine.recv(64)
		    except socket.timeout:
		        return "none"
		    if len(a) == 0:
		        return "closed"
		    magic, kind, stage, err, p, st = struct.unpack("IIIiii", a)
		    return "%s %d %d" % (chr(kind), stage, err)
		head = lambda argv, env: struct.pack("IIII", 0x62726778, 1, argv, env)
		print(ask(b"junk"))                                  # shorter than a header
		print(ask(struct.pack("IIII", 1, 1, 1, 0) + b"true\0\0"))  # bad magic
		print(ask(head(1, 0) + b"true\0"))                   # no cwd
		print(ask(head(1, 0) + b"true\0\0more\0"))          # bytes past the strings
		print(ask(head(0, 0) + b"\0"))                       # no argv
		print(ask(head(1, 0) + b"true\0\0", n_fds=2))        # two fds
		print(ask(head(1, 0) + b"/no/such\0\0"))             # no such program
		print(ask(head(1, 0) + b"true\0\0")[:1])             # a good one, after all that
		# The host's kill word (what kernels before 6.9 need): the
		# process's whole group goes, its leader and what it left.
		mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
		body = head(3, 0) + b"sh\0-c\0sleep 1003 & sleep 1004\0\0"
		port.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("4i", theirs.fileno(), null, null, null))])
		theirs.close()
		mine.settimeout(20)
		print(struct.unpack("IIIiii", mine.recv(64))[1] == ord("S"))
		mine.send(struct.pack("IIIiii", 0x62726778, ord("K"), 0, 0, 0, 0))
		magic, kind, stage, err, p, st = struct.unpack("IIIiii", mine.recv(64))
		print(chr(kind), st)
	EOF
	[ "$status" -eq 0 ]
	[ "$output" = "F 0 22
F 0 22
F 0 22
F 0 22
F 0 22
F 0 22
F 3 2
S
True
X 9" ] || fail "$output"
	run sb exec s1 -- sh -c 'echo $PPID'
	[ "$output" = 1 ]
	run in_s1 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " " | grep -c "sleep 100[34]" || true'
	[ "$output" = 0 ]
}

@test "sandbox exec: a paused sandbox refuses it in one line; resumed, it runs" {
	"$BRIG" --root "$SB_ROOT" pause s1
	run sb exec s1 -- true
	"$BRIG" --root "$SB_ROOT" resume s1
	[ "$status" -ne 0 ]
	[ "$output" = "brig: sandbox exec: cannot exec in container \`s1\`: it is paused" ]
	run sb exec s1 -- sh -c 'echo $PPID'
	[ "$output" = 1 ]
}

@test "sandbox exec: a request too big for the init's port goes the classic way" {
	big=$(head -c 70000 /dev/zero | tr '\0' x)
	run sb exec -e "BIG=$big" s1 -- sh -c 'echo $PPID ${#BIG}'
	[ "$status" -eq 0 ]
	[ "$output" = "0 70000" ]
}

@test "sandbox: /mnt/data survives a killed process and a restarted init" {
	run in_s1 'echo kept >/mnt/data/survivor; kill -9 $$'
	[ "$status" -eq 137 ]
	"$BRIG" --root "$SB_ROOT" kill s1 KILL
	for _ in $(seq 50); do
		[ "$("$BRIG" --root "$SB_ROOT" state s1 | jq -r .status)" = stopped ] && break
		sleep 0.2
	done
	run sb create s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"sandbox \`s1\` exists (stopped)"* ]]
	"$BRIG" --root "$SB_ROOT" delete s1
	sb create --rootfs "$ROOTFS_TREE" --services "$SB_HOST/services.conf" s1
	run sb exec s1 -- cat /mnt/data/survivor
	[ "$output" = kept ] || fail "after the restart: $output"
}

@test "sandbox: the host holds no mount of a running sandbox's data; cp and ls reach it through its init" {
	refute grep -q " $BRIG_SANDBOX_DIR/s1/data " /proc/self/mountinfo
	pid=$("$BRIG" --root "$SB_ROOT" state s1 | jq -r .pid)
	grep -qE " /mnt/data .* - ext4 " "/proc/$pid/mountinfo"
	echo one >"$SB_HOST/held.txt"
	sb cp "$SB_HOST/held.txt" s1:/mnt/data/held.txt
	[ "$(in_s1 'cat /mnt/data/held.txt')" = one ]
	used=$(sb ls | awk '$1 == "s1" { print $NF }')
	[[ "$used" =~ ^[0-9.]+[KMGT]?/[0-9.]+[KMGT]?$ ]] || fail "s1's data in ls: $used"
	refute grep -q " $BRIG_SANDBOX_DIR/s1/data " /proc/self/mountinfo
	# A record that names another process is not taken for the init: the
	# copy mounts the image on the host again, from the loop device the
	# sandbox holds, so it is the same file system, never a second one.
	cp "$BRIG_SANDBOX_DIR/s1/init.pid" "$SB_HOST/init.pid"
	echo 1 >"$BRIG_SANDBOX_DIR/s1/init.pid"
	echo two >"$SB_HOST/held.txt"
	sb cp "$SB_HOST/held.txt" s1:/mnt/data/held.txt
	cp "$SB_HOST/init.pid" "$BRIG_SANDBOX_DIR/s1/init.pid"
	[ "$(in_s1 'cat /mnt/data/held.txt')" = two ]
	[ "$(losetup -j "$BRIG_SANDBOX_DIR/s1/data.img" | wc -l)" -eq 1 ]
	grep -q " $BRIG_SANDBOX_DIR/s1/data " /proc/self/mountinfo
	in_s1 'rm /mnt/data/held.txt'
}

@test "sandbox cp: in and out of /mnt/data, never out of it through a symlink" {
	printf 'a,b\n1,2\n' >"$SB_HOST/data.csv"
	sb cp "$SB_HOST/data.csv" s1:/mnt/data/
	run sb exec s1 -- sh -c 'stat -c "%u %s" data.csv && python3 -c "print(open(\"data.csv\").read().count(\",\"))"'
	[ "$(squeeze "$output")" = "1000 8 2" ]
	in_s1 'echo result >out.txt; ln -sf /etc/shadow shadow; ln -sf ../../../../etc root'
	sb cp s1:out.txt "$SB_HOST/"
	[ "$(cat "$SB_HOST/out.txt")" = result ]
	run sb cp s1:shadow "$SB_HOST/stolen"
	[ "$status" -ne 0 ]
	[ ! -e "$SB_HOST/stolen" ]
	# In-root resolution: "root" points at /mnt/data's own (empty) /etc.
	run sb cp "$SB_HOST/data.csv" s1:root/passwd
	[ "$status" -ne 0 ]
	run sb cp s1:/etc/passwd "$SB_HOST/x"
	[ "$status" -ne 0 ]
	[[ "$output" == *"only /mnt/data is reachable"* ]]
}

@test "sandbox create with overrides: quota gives ENOSPC, limits set, data private, rm leaves nothing" {
	sb create --rootfs "$ROOTFS_TREE" --data-size 16M --memory 64M --pids 32 --cpus 0.5 s2
	run sb exec s2 -- sh -c 'dd if=/dev/zero of=/mnt/data/fill bs=1M count=64 2>&1; echo rc=$?'
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *"rc=1" ]]
	pid=$("$BRIG" --root "$SB_ROOT" state s2 | jq -r .pid)
	# Its own cgroup (one directory per hierarchy on v1), not the host's root.
	cgs=$(jq -r .cgroupPath "$SB_ROOT/s2/state.json")
	[ -n "$cgs" ]
	[ "$(pid_cgroup_dir "$pid" memory)" != "$(pid_cgroup_dir 1 memory)" ]
	[ "$(pid_memory_limit "$pid")" = 67108864 ]
	[ "$(pid_pids_limit "$pid")" = 32 ]
	[ "$(pid_cpu_max "$pid")" = "50000 100000" ]
	# Forking past the pid limit fails inside; the sandbox stays usable.
	run sb exec s2 -- sh -c 'for i in $(seq 64); do sleep 30 & done 2>&1 | grep -c "fork\|Resource" ; kill $(jobs -p) 2>/dev/null; true'
	[ "$output" -ge 1 ]
	# Allocating past the memory limit fails inside; the sandbox lives on.
	run sb exec s2 -- python3 -c 's = b"x" * (256 << 20); print("allocated")'
	[ "$status" -ne 0 ]
	[[ "$output" != *allocated* ]]
	run sb exec s2 -- true
	[ "$status" -eq 0 ]
	# Neither sandbox sees the other's data.
	run sb exec s2 -- sh -c 'ls /mnt/data; cat /mnt/data/survivor 2>&1'
	[[ "$output" != *kept* ]]
	run in_s1 'ls /mnt/data/fill'
	[ "$status" -ne 0 ]
	sb rm s2
	[ ! -e "$BRIG_SANDBOX_DIR/s2" ]
	[ ! -e "$SB_ROOT/s2" ]
	for cg in $cgs; do
		[ ! -e "$cg" ] || fail "$cg survived sandbox rm"
	done
	refute grep -q "$BRIG_SANDBOX_DIR/s2" /proc/self/mountinfo
	refute sh -c "losetup -a | grep -q '$BRIG_SANDBOX_DIR/s2'"
	run sb rm s2
	[ "$status" -ne 0 ]
	[[ "$output" == *"no sandbox \`s2\`"* ]]
}

@test "sandbox create: one formatted image per data size, copied into each sandbox, never written through" {
	sb create --rootfs "$ROOTFS_TREE" --data-size 24M --memory 64M g1
	kept=$(echo "$BRIG_SANDBOX_DIR"/.images/ext4-*-25165824.img)
	[ -f "$kept" ] || fail "no formatted image kept: $(ls -la "$BRIG_SANDBOX_DIR/.images" 2>&1)"
	sum=$(md5sum <"$kept")
	# The copy's root is the sandbox user's, and empty.
	run sb exec g1 -- sh -c 'echo "$(stat -c %u /mnt/data) $(id -u) [$(ls -A /mnt/data)]"; echo one >/mnt/data/f'
	[ "$output" = "1000 1000 []" ] || fail "g1's /mnt/data: $output"
	sb create --rootfs "$ROOTFS_TREE" --data-size 24M --memory 64M g2
	run sb exec g2 -- sh -c 'ls -A /mnt/data; echo two >/mnt/data/f'
	[ -z "$output" ] || fail "g2's new /mnt/data holds: $output"
	[ "$(sb exec g1 -- cat /mnt/data/f)" = one ]
	[ "$(sb exec g2 -- cat /mnt/data/f)" = two ]
	# The image's inode tables are holes, zeros already: ext4 is told so,
	# and does not write them all again in the background.
	pid=$("$BRIG" --root "$SB_ROOT" state g1 | jq -r .pid)
	grep -E " /mnt/data .* - ext4 " "/proc/$pid/mountinfo" | grep -q noinit_itable ||
		fail "g1's data is mounted without noinit_itable: $(grep " /mnt/data " "/proc/$pid/mountinfo")"
	# Neither sandbox wrote through to the kept image: it is the same,
	# and an empty clean file system.
	[ "$(md5sum <"$kept")" = "$sum" ]
	run e2fsck -fn "$kept"
	[ "$status" -eq 0 ] || fail "e2fsck of the kept image: $output"
	sb rm g1
	sb rm g2
	# Gone, it is formatted again by the next create of that size.
	rm "$kept"
	sb create --rootfs "$ROOTFS_TREE" --data-size 24M --memory 64M g3
	[ -f "$kept" ]
	[ "$(sb exec g3 -- ls -A /mnt/data)" = "" ]
	sb rm g3
	run sb ls
	[[ "$output" != *g3* ]] || fail "g3 outlived its rm: $output"
}

@test "brig run --profile sandbox and the annotation apply the profile to any bundle" {
	setup_bundle
	set_args python3 -c 'import os; open("/mnt/data/f","w").write("x"); print(2+2, os.getuid(), os.getcwd())'
	update_config '.root.path = "rootfs"'
	run brig run --profile sandbox "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "4 1000 /mnt/data" ]
	[ ! -e "$ROOT/$CID" ]
	refute grep -q "$ROOT/$CID" /proc/self/mountinfo
	update_config '.annotations["run.brig.profile"] = "sandbox"'
	set_args sh -c 'cat /proc/1/cmdline | tr "\0" " "'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == "/usr/sbin/brig-init -- sh -c"* ]]
	teardown_bundle
}

@test "sandbox: bad input gives one line and leaves nothing" {
	mkdir -p "$SB_HOST/nojemalloc/usr/bin"
	run sb create --rootfs "$SB_HOST/nojemalloc" s3
	[ "$status" -eq 1 ]
	[[ "$output" == *"has no jemalloc"* ]]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$BRIG_SANDBOX_DIR/s3" ]
	[ ! -e "$SB_ROOT/s3" ]
	run sb create --data-size 12Q s3
	[ "$status" -eq 1 ]
	[[ "$output" == *"invalid --data-size"* ]]
	run sb create "a/b"
	[ "$status" -eq 1 ]
	[[ "$output" == *"invalid id"* ]]
	run sb exec --cap CAP_SYS_ADMIN s1 -- true
	[ "$status" -ne 0 ]
	run sb frobnicate
	[ "$status" -eq 1 ]
	[[ "$output" == *"unknown command"* ]]
}

@test "sandbox create's output can be read through a pipe: the sandbox holds none of the caller's stdio" {
	# A detached init that kept the caller's stdout would hold the pipe
	# open for the sandbox's life, and the reader would wait for ever.
	run timeout 60 sh -c "'$BRIG' --root '$SB_ROOT' sandbox create --memory 64M --data-size 8M --pids 64 s2 | cat"
	[ "$status" -eq 0 ]
	pid=$("$BRIG" --root "$SB_ROOT" state s2 | jq .pid)
	for fd in 0 1 2; do
		[ "$(readlink "/proc/$pid/fd/$fd")" = /dev/null ]
	done
	sb rm s2
}
