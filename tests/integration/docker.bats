#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # shell programs run inside the containers; bats variables
# Docker with brig as its OCI runtime: a private dockerd for the file
# (docker-helpers.bash) with `--add-runtime brig=$BRIG`, every container run
# with --runtime brig and no network. dockerd starts its own containerd,
# whose runc shim (containerd-shim-runc-v2) runs brig for create, start,
# exec, kill, pause, resume, ps and delete: what `docker run`, exec, stop,
# pause, top, stats and rm become. The image is a busybox root imported
# from a tarball: no registry. Docker builds a v1 spec on this hybrid host
# (cgroupfs driver, the file's own cgroup parent).
#
# BRIG=/usr/sbin/runc runs the same tests with runc registered under the
# name brig: the reference run. Each docker command costs a fraction of a
# second; a test does what it can with few of them.

load helpers
load docker-helpers # and with it the setup and teardown hooks

# ------------------------------------------------------------------ run ----

@test "docker: info lists brig; run --rm prints the output and returns the exit status" {
	# contrib/docker/daemon.json registers the same runtime by name.
	run jq -er '.runtimes.brig.path' "$BATS_TEST_DIRNAME/../../contrib/docker/daemon.json"
	[ "$status" -eq 0 ] || fail "contrib/docker/daemon.json has no runtimes.brig.path: $output"

	run dk info --format '{{json .Runtimes}}'
	[ "$status" -eq 0 ] || fail "info: $output"
	jq -e --arg p "$BRIG" '.brig.path == $p' <<<"$output" >/dev/null ||
		fail "brig ($BRIG) is not among the runtimes: $output"

	run dk_run --rm "$DOCKER_IMAGE" echo hello from brig
	[ "$status" -eq 0 ] || fail "status $status: $output"
	[ "$output" = "hello from brig" ] || fail "output: $output"

	run dk_run --rm "$DOCKER_IMAGE" sh -c 'echo bye; exit 3'
	[ "$status" -eq 3 ] || fail "expected 3, got $status: $output"
	[ "$output" = bye ] || fail "output: $output"
}

@test "docker: run exits 127 for a program that isn't there, 126 for one that can't run" {
	# Docker's documented statuses (125 is for its own errors). dockerd
	# and the client tell them from the runtime's error text: they look
	# for "no such file or directory", "executable file not found" or
	# "permission denied", as runc (Go) words them.
	# Not bats' `run`, which warns of a 127 it was not told to expect,
	# and with `run -127` shows no output when the status differs.
	status=0
	output=$(dk_run --rm "$DOCKER_IMAGE" /no/such/program 2>&1) || status=$?
	[ "$status" -eq 127 ] || fail "missing program: expected 127, got $status: $output"
	run dk_run --rm "$DOCKER_IMAGE" /etc/passwd
	[ "$status" -eq 126 ] || fail "not executable: expected 126, got $status: $output"
}

# --------------------------------------------------------------- limits ----

@test "docker: --memory, --pids-limit and --cpus reach the container's cgroups" {
	# What the container sees of its own cgroups: Docker mounts them
	# read-only at /sys/fs/cgroup, one directory per v1 hierarchy (cgroup
	# v2: one file per limit).
	run dk_run --rm --memory 64m --pids-limit 40 --cpus 0.5 "$DOCKER_IMAGE" sh -c '
		cd /sys/fs/cgroup
		if [ -e memory.max ]; then
			echo $(cat memory.max pids.max cpu.max)
		else
			echo $(cat memory/memory.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us)
		fi
		cat /proc/self/cgroup'
	[ "$status" -eq 0 ] || fail "status $status: $output"
	# The client's warning, on a kernel without swap accounting, comes first.
	[ "${lines[0]#WARNING: }" = "${lines[0]}" ] || lines=("${lines[@]:1}")
	[ "${lines[0]}" = "67108864 40 50000 100000" ] || fail "limits (memory, pids, cpu quota and period): ${lines[0]}"
	# On v1 (no cgroup namespace) the container's cgroup path shows:
	# under the daemon's --cgroup-parent, named by the container's id.
	if printf '%s\n' "${lines[@]}" | grep -q '^[0-9]*:memory:'; then
		printf '%s\n' "${lines[@]}" | grep -qE "^[0-9]+:memory:$DOCKER_CGROUP_PARENT/[0-9a-f]{64}\$" ||
			fail "memory cgroup not under $DOCKER_CGROUP_PARENT: $output"
	fi
}

@test "docker: a process over --memory is OOM-killed, and inspect says so" {
	# dd's 256 MiB buffer is over the limit and over the default swap
	# allowance (twice the limit).
	run dk_run --name hog --memory 64m "$DOCKER_IMAGE" dd if=/dev/zero of=/dev/null bs=256M count=1
	[ "$status" -eq 137 ] || fail "expected 137 (SIGKILL), got $status: $output"
	# OOMKilled comes from the shim's watch on the cgroup the runtime made.
	[ "$(dk_inspect hog '{{.State.OOMKilled}} {{.State.ExitCode}}')" = "true 137" ] ||
		fail "inspect: $(dk_inspect hog '{{json .State}}')"
}

# ------------------------------------------------------------- security ----

@test "docker: --read-only with a --tmpfs /tmp, as --user 1000:1000" {
	run dk_run --rm --read-only --tmpfs /tmp --user 1000:1000 "$DOCKER_IMAGE" sh -c '
		id -u; id -g
		touch /file 2>&1 || echo "root: refused"
		touch /tmp/file && echo "tmp: written"'
	[ "$status" -eq 0 ] || fail "status $status: $output"
	[ "${lines[0]} ${lines[1]}" = "1000 1000" ] || fail "uid and gid: $output"
	# EROFS, not EACCES: the kernel checks the read-only mount first.
	[[ "${lines[2]}" == *"Read-only file system"* ]] || fail "writing / : $output"
	[ "${lines[3]}" = "root: refused" ] || fail "writing / : $output"
	[ "${lines[4]}" = "tmp: written" ] || fail "writing /tmp: $output"
}

@test "docker: --cap-drop ALL and no-new-privileges" {
	run dk_run --rm --cap-drop ALL --security-opt no-new-privileges "$DOCKER_IMAGE" sh -c '
		grep -E "^(CapPrm|CapEff|CapBnd|NoNewPrivs):" /proc/self/status
		# Giving a file away takes CAP_CHOWN, even to root.
		touch /tmp/f; chown 1000 /tmp/f 2>&1 || echo "chown: refused"'
	[ "$status" -eq 0 ] || fail "status $status: $output"
	out=$(printf '%s\n' "$output" | tr -s '\t ' ' ')
	for want in "CapPrm: 0000000000000000" "CapEff: 0000000000000000" \
		"CapBnd: 0000000000000000" "NoNewPrivs: 1" "chown: refused"; do
		grep -qxF "$want" <<<"$out" || fail "no '$want' in: $output"
	done
}

@test "docker: a seccomp profile that denies mkdir with EPERM" {
	profile=$BATS_TEST_TMPDIR/no-mkdir.json
	no_mkdir_profile "$profile"
	run dk_run --rm --security-opt "seccomp=$profile" "$DOCKER_IMAGE" sh -c '
		mkdir /tmp/d 2>&1 || echo "mkdir: refused"
		touch /tmp/f && rm /tmp/f && echo "touch: done"
		grep "^Seccomp:" /proc/self/status'
	[ "$status" -eq 0 ] || fail "status $status: $output"
	[[ "${lines[0]}" == *"Operation not permitted"* ]] || fail "mkdir: $output"
	[ "${lines[1]}" = "mkdir: refused" ] || fail "mkdir: $output"
	[ "${lines[2]}" = "touch: done" ] || fail "other calls: $output"
	[ "$(squeeze "${lines[3]}")" = "Seccomp: 2" ] || fail "no filter: $output"
}

# ----------------------------------------------------------------- exec ----

@test "docker: exec and exec -it into a running container of brig's" {
	dk_run -d --name life "$DOCKER_IMAGE" sh -c 'echo started; exec sleep 1000' >/dev/null
	wait_for_log life started
	id=$(dk_inspect life '{{.Id}}')
	pid=$(dk_inspect life '{{.State.Pid}}')

	# The shim runs the binary under test, whose state says what
	# inspect says.
	state=$(docker_state_dir "$id")
	opts=$DOCKER_DIR/exec/containerd/daemon/io.containerd.runtime.v2.task/$DOCKER_NS/$id/options.json
	[ "$(jq -r .binary_name "$opts")" = "$BRIG" ] || fail "the shim's runtime: $(cat "$opts")"
	run "$BRIG" --root "$(dirname "$state")" state "$id"
	[ "$status" -eq 0 ] || fail "state: $output"
	[ "$(jq -r '"\(.status) \(.pid)"' <<<"$output")" = "running $pid" ] || fail "state: $output (inspect: pid $pid)"

	run dk exec life sh -c 'echo from exec; exit 4'
	[ "$status" -eq 4 ] || fail "exec status $status: $output"
	[ "$output" = "from exec" ] || fail "exec: $output"

	run dk exec --user 1000:1000 --workdir /tmp --env FOO=bar life sh -c 'echo $(id -u) $(pwd) $FOO'
	[ "$output" = "1000 /tmp bar" ] || fail "exec options: $output"

	# Without -t, no terminal; with -it, one (a pty from the runtime's
	# console socket). The client wants a terminal of its own for -it:
	# script(1) gives it one. The client puts that terminal in raw mode, so
	# it must stay in the terminal's foreground process group: timeout
	# --foreground. Without it, timeout moves itself and the client to a
	# group of their own whenever script's shell forks instead of exec'ing
	# the command (dash as $SHELL does), and SIGTTOU stops the client.
	run dk exec life tty
	[[ "$output" == *"not a tty"* ]] || fail "exec without -t: $output"
	cmd=$(printf '%q ' env "DOCKER_CONFIG=$DOCKER_DIR/cli" timeout --foreground -k 5 60 \
		"$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" exec -it life sh -c 'tty; echo ok')
	# stdin is /dev/null: CI may run the suite with it closed, and script
	# then takes fd 0 for its own pty.
	run script -qec "$cmd" /dev/null </dev/null
	if [ "$status" -ne 0 ]; then
		docker_show_logs
		fail "exec -it status $status: $output"
	fi
	# script's pty echoes a NUL that reaches it as the session starts,
	# as "^@", anywhere among the lines: drop it.
	out=$(printf '%s\n' "$output" | tr -d '\r' | sed 's/\^@//g')
	grep -qxE '/dev/pts/[0-9]+' <<<"$out" || fail "exec -it: no terminal: $out"
	grep -qx ok <<<"$out" || fail "exec -it: $out"
}

# ------------------------------------------------------------ lifecycle ----

@test "docker: stop sends SIGTERM, and --time 1 kills a container that ignores it" {
	dk_run -d --name term "$DOCKER_IMAGE" \
		sh -c 'trap "echo got TERM; exit 0" TERM; echo ready; while :; do sleep 0.1; done' >/dev/null
	dk_run -d --name stubborn "$DOCKER_IMAGE" \
		sh -c 'trap "" TERM; echo ready; while :; do sleep 0.1; done' >/dev/null
	wait_for_log term ready
	wait_for_log stubborn ready

	# Handled: well within the default 10 s grace.
	start=$(date +%s%N)
	dk stop term >/dev/null
	ms=$((($(date +%s%N) - start) / 1000000))
	[ "$ms" -lt 5000 ] || fail "stop took ${ms} ms: SIGTERM not delivered?"
	[ "$(dk_inspect term '{{.State.Status}} {{.State.ExitCode}}')" = "exited 0" ] ||
		fail "term: $(dk_inspect term '{{json .State}}')"
	run dk logs term
	[[ "$output" == *"got TERM"* ]] || fail "logs: $output"

	# Ignored: SIGKILL after the second of grace.
	start=$(date +%s%N)
	dk stop --time 1 stubborn >/dev/null
	ms=$((($(date +%s%N) - start) / 1000000))
	[ "$ms" -ge 1000 ] && [ "$ms" -lt 8000 ] || fail "stop --time 1 took ${ms} ms"
	[ "$(dk_inspect stubborn '{{.State.Status}} {{.State.ExitCode}}')" = "exited 137" ] ||
		fail "stubborn: $(dk_inspect stubborn '{{json .State}}')"
}

@test "docker: pause freezes the container and unpause thaws it" {
	# A counter, renamed into place so that the host never reads half a
	# write.
	dk_run -d --name counter "$DOCKER_IMAGE" sh -c \
		'i=0; echo ready; while :; do i=$((i+1)); echo $i >/tmp/n.new; mv /tmp/n.new /tmp/n; sleep 0.1; done' >/dev/null
	wait_for_log counter ready
	id=$(dk_inspect counter '{{.Id}}')
	pid=$(dk_inspect counter '{{.State.Pid}}')
	n=/proc/$pid/root/tmp/n

	dk pause counter >/dev/null
	[ "$(dk_inspect counter '{{.State.Paused}} {{.State.Status}}')" = "true paused" ] ||
		fail "inspect: $(dk_inspect counter '{{json .State}}')"
	state=$(docker_state_dir "$id")
	[ "$("$BRIG" --root "$(dirname "$state")" state "$id" | jq -r .status)" = paused ] ||
		fail "the runtime's state is not paused"
	a=$(cat "$n")
	sleep 1
	b=$(cat "$n")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "the counter went on while paused: $a, then $b"

	dk unpause counter >/dev/null
	[ "$(dk_inspect counter '{{.State.Paused}} {{.State.Status}}')" = "false running" ] ||
		fail "inspect: $(dk_inspect counter '{{json .State}}')"
	for _ in $(seq 50); do
		c=$(cat "$n")
		[ "${c:-0}" -gt "$b" ] && break
		sleep 0.1
	done
	[ "${c:-0}" -gt "$b" ] || fail "the counter is stuck at $b after unpause"
}

@test "docker: logs, top and stats --no-stream of a running container" {
	dk_run -d --name busy --memory 64m "$DOCKER_IMAGE" sh -c 'echo hello from the logs; exec sleep 1000' >/dev/null
	wait_for_log busy "hello from the logs"

	run dk logs busy
	[ "$output" = "hello from the logs" ] || fail "logs: $output"

	# top lists the container's processes through the runtime's ps.
	run dk top busy
	[ "$status" -eq 0 ] || fail "top: $output"
	[[ "$output" == *"sleep 1000"* ]] || fail "top: $output"

	# Usage (not nothing) against the limit, e.g. "540KiB / 64MiB".
	run dk stats --no-stream --format '{{.MemUsage}}' busy
	[ "$status" -eq 0 ] || fail "stats: $output"
	[[ "$output" =~ ^([0-9.]+)([KMG]i)?B\ /\ 64MiB$ ]] || fail "stats: $output"
	[ "${BASH_REMATCH[1]}" != 0 ] || fail "no memory used: $output"
}

@test "docker: rm -f leaves no runtime state, process, mount, shim or cgroup" {
	dk_run -d --name doomed "$DOCKER_IMAGE" sh -c 'echo ready; exec sleep 1000' >/dev/null
	wait_for_log doomed ready
	id=$(dk_inspect doomed '{{.Id}}')
	pid=$(dk_inspect doomed '{{.State.Pid}}')
	merged=$(dk_inspect doomed '{{.GraphDriver.Data.MergedDir}}')
	[ "$merged" != "<no value>" ] || merged="" # vfs
	state=$(docker_state_dir "$id")

	# All there before, so that "gone" below means something.
	[ -d "$state" ] || fail "no runtime state in $state"
	[ "$("$BRIG" --root "$(dirname "$state")" state "$id" | jq -r .status)" = running ] ||
		fail "the runtime's state is not running"
	pid_alive "$pid" || fail "no container process $pid"
	# overlay2's merged root (vfs has none: a plain directory).
	[ -z "$merged" ] || grep -qF " $merged " /proc/self/mounts || fail "the root $merged is not mounted"
	[ -n "$(docker_shim_pids "$id")" ] || fail "no shim for $id"
	cgroups=$(find /sys/fs/cgroup -maxdepth 3 -type d -path "*$DOCKER_CGROUP_PARENT/$id")
	[ -n "$cgroups" ] || fail "no cgroup under $DOCKER_CGROUP_PARENT"

	dk rm -f doomed >/dev/null
	[ -z "$(dk ps -aq)" ] || fail "docker still lists: $(dk ps -a)"
	[ ! -e "$state" ] || fail "the runtime's state is left: $(ls -la "$state")"
	run "$BRIG" --root "$(dirname "$state")" state "$id"
	[ "$status" -ne 0 ] || fail "the runtime still knows $id: $output"
	! pid_alive "$pid" || fail "process $pid is left: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
	! grep -qF "$id" /proc/self/mountinfo || fail "mounts are left: $(grep -F "$id" /proc/self/mountinfo)"
	[ -z "$merged" ] || ! grep -qF " $merged " /proc/self/mounts || fail "the root $merged is still mounted"
	# The shim exits once the task is deleted, not always before rm returns.
	for _ in $(seq 50); do
		[ -z "$(docker_shim_pids "$id")" ] && break
		sleep 0.1
	done
	[ -z "$(docker_shim_pids "$id")" ] || fail "a shim is left: $(docker_shim_pids "$id")"
	for d in $cgroups; do
		[ ! -d "$d" ] || fail "the cgroup $d is left"
	done
}
