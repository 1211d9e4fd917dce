#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the container
# podman with brig as its OCI runtime: a real client's run, exec, ps, logs,
# stop, kill, pause, inspect, stats, update and rm, and the limits and
# security options it turns into config.json. The image is a busybox root
# imported from a tarball: no registry, no network. podman drives the
# cgroupfs manager (no systemd here) and builds a v1 or a v2 spec from the
# host's layout: `make check` runs this file on the host (hybrid) and in
# the test VM (pure v2), so both are covered; checkpoint and restore
# (criu) are in podman_checkpoint.bats, VM only. Every podman command
# costs seconds in the VM: each test does a lot with few of them.

load helpers
load podman-helpers # and with it the setup and teardown hooks

# ------------------------------------------------------------------ run ----

@test "podman: run prints the container's output and exits with its status" {
	run podman_cmd run --rm "$PODMAN_IMAGE" echo hello from brig
	[ "$status" -eq 0 ] || fail "status $status: $output"
	[ "$output" = "hello from brig" ]

	run podman_cmd run --rm "$PODMAN_IMAGE" sh -c 'exit 3'
	[ "$status" -eq 3 ] || fail "expected 3, got $status: $output"

	# Kept (no --rm): inspect reads the same code back.
	run podman_cmd run --name exit42 "$PODMAN_IMAGE" sh -c 'echo bye; exit 42'
	[ "$status" -eq 42 ] || fail "expected 42, got $status: $output"
	[ "$(podman_cmd inspect --format '{{.State.Status}} {{.State.ExitCode}}' exit42)" = "exited 42" ]
	podman_cmd rm exit42
}

@test "podman: a missing command exits 127 and podman shows brig's error" {
	run -127 podman_cmd run --rm "$PODMAN_IMAGE" /no/such/program
	[ "$status" -eq 127 ] || fail "expected 127, got $status: $output"
	[[ "$output" == *"/no/such/program"* ]] || fail "the error does not name the program: $output"
}

@test "podman: run -t gives the process a terminal" {
	run podman_cmd run --rm -t "$PODMAN_IMAGE" sh -c 'tty; stty size'
	[ "$status" -eq 0 ] || fail "status $status: $output"
	out=$(printf '%s\n' "$output" | tr -d '\r')
	[[ "$out" =~ ^/dev/pts/[0-9]+ ]] || fail "no terminal: $out"
	# Without -t, no terminal.
	run podman_cmd run --rm "$PODMAN_IMAGE" sh -c 'tty || echo none'
	[[ "$output" == *"not a tty"* || "$output" == *none* ]] || fail "unexpected terminal: $output"
}

# ------------------------------------------ a detached container's life ----

@test "podman: run -d, brig state, ps, logs, exec, exec -t, inspect" {
	podman_cmd run -d --name life "$PODMAN_IMAGE" sh -c 'echo started; exec sleep 1000'
	wait_for_log life started
	id=$(full_id life)

	# It is brig's container, and brig says it runs.
	[ "$(podman_cmd inspect --format '{{.OCIRuntime}}' life)" = brig ]
	[ "$("$BRIG" state "$id" | jq -r .status)" = running ]

	run podman_cmd ps --format '{{.Names}} {{.Status}}'
	[[ "$output" == *"life Up"* ]] || fail "ps: $output"

	run podman_cmd inspect --format '{{.State.Status}} {{.State.Running}} {{.State.Pid}}' life
	read -r st running pid <<<"$output"
	[ "$st" = running ] && [ "$running" = true ] || fail "inspect: $output"
	[ "$pid" -gt 0 ] && [ "$pid" = "$("$BRIG" state "$id" | jq -r .pid)" ] || fail "pid $pid vs brig state"
	[ "$(cat "/proc/$pid/comm")" = sleep ]

	run podman_cmd exec life sh -c 'echo from exec; exit 4'
	[ "$status" -eq 4 ] || fail "exec status $status: $output"
	[ "$output" = "from exec" ]

	run podman_cmd exec --user 1000:1000 --workdir /tmp --env FOO=bar life sh -c 'echo $(id -u) $(pwd) $FOO'
	[ "$output" = "1000 /tmp bar" ] || fail "exec options: $output"

	run podman_cmd exec -t life tty
	[ "$status" -eq 0 ] || fail "exec -t status $status: $output"
	[[ "$(printf '%s' "$output" | tr -d '\r')" =~ ^/dev/pts/[0-9]+$ ]] || fail "exec -t: $output"

	# A detached exec runs in the background of the same container.
	podman_cmd exec -d life sh -c 'echo detached >/tmp/d'
	run podman_cmd exec life sh -c 'for i in $(seq 20); do [ -s /tmp/d ] && break; sleep 0.2; done; cat /tmp/d'
	[ "$output" = detached ] || fail "exec -d: $output"

	run podman_cmd logs life
	[ "$output" = started ] || fail "logs: $output"
	podman_cmd rm -f -t 0 life
}

@test "podman: stop sends SIGTERM, which the container may handle" {
	podman_cmd run -d --name term "$PODMAN_IMAGE" \
		sh -c 'trap "echo got TERM; exit 7" TERM; echo ready; while :; do sleep 0.2; done'
	wait_for_log term ready
	podman_cmd stop --time 60 term
	[ "$(podman_cmd inspect --format '{{.State.Status}} {{.State.ExitCode}}' term)" = "exited 7" ]
	run podman_cmd logs term
	[[ "$output" == *"got TERM"* ]] || fail "logs: $output"
	podman_cmd rm term
}

@test "podman: stop --time 2 kills a container that ignores SIGTERM" {
	podman_cmd run -d --name stubborn "$PODMAN_IMAGE" \
		sh -c 'trap "" TERM; echo ready; while :; do sleep 0.2; done'
	wait_for_log stubborn ready
	start=$(date +%s)
	podman_cmd stop --time 2 stubborn
	elapsed=$(($(date +%s) - start))
	[ "$elapsed" -ge 2 ] || fail "stopped after ${elapsed}s: SIGTERM was not ignored?"
	[ "$(podman_cmd inspect --format '{{.State.Status}} {{.State.ExitCode}}' stubborn)" = "exited 137" ]
	podman_cmd rm stubborn
}

@test "podman: kill delivers the signal it names, then SIGKILL by default" {
	podman_cmd run -d --name killme "$PODMAN_IMAGE" \
		sh -c 'trap "echo got USR1" USR1; echo ready; while :; do sleep 0.2; done'
	wait_for_log killme ready
	podman_cmd kill --signal USR1 killme
	wait_for_log killme "got USR1"
	[ "$(podman_cmd inspect --format '{{.State.Status}}' killme)" = running ]
	podman_cmd kill killme
	podman_cmd wait killme >/dev/null
	[ "$(podman_cmd inspect --format '{{.State.Status}} {{.State.ExitCode}}' killme)" = "exited 137" ]
	podman_cmd rm killme
}

@test "podman: pause freezes the container, unpause thaws it" {
	podman_cmd run -d --name frozen "$PODMAN_IMAGE" \
		sh -c 'i=0; while :; do i=$((i+1)); echo $i >/tmp/n.new; mv /tmp/n.new /tmp/n; sleep 0.1; done'
	id=$(full_id frozen)
	# The counter file is replaced whole (mv), so a reader never sees it empty.
	podman_cmd pause frozen
	[ "$(podman_cmd inspect --format '{{.State.Status}}' frozen)" = paused ]
	[ "$("$BRIG" state "$id" | jq -r .status)" = paused ]
	pid=$(podman_cmd inspect --format '{{.State.Pid}}' frozen)
	pid_frozen "$pid" || fail "$(pid_cgroup_dir "$pid" freezer) is not frozen"
	podman_cmd unpause frozen
	[ "$(podman_cmd inspect --format '{{.State.Status}}' frozen)" = running ]
	refute pid_frozen "$pid"
	run podman_cmd exec frozen sh -c 'a=$(cat /tmp/n); sleep 1; b=$(cat /tmp/n); [ "$b" -gt "$a" ] && echo moving'
	[ "$output" = moving ] || fail "after unpause: $output"
	podman_cmd rm -f -t 0 frozen
}

@test "podman: --memory, --pids-limit and --cpus are the cgroup's; stats and update see it" {
	podman_cmd run -d --name stat --memory 64m --pids-limit 50 --cpus 0.5 "$PODMAN_IMAGE" sleep 1000
	pid=$(podman_cmd inspect --format '{{.State.Pid}}' stat)
	[ "$(pid_memory_limit "$pid")" = 67108864 ] || fail "memory: $(pid_memory_limit "$pid")"
	[ "$(pid_pids_limit "$pid")" = 50 ] || fail "pids: $(pid_pids_limit "$pid")"
	[ "$(pid_cpu_max "$pid")" = "50000 100000" ] || fail "cpu: $(pid_cpu_max "$pid")"

	# stats reads the cgroup (the limit it shows is podman's own record).
	run podman_cmd stats --no-stream --format '{{.Name}} {{.PIDs}} {{.MemUsage}}' stat
	[ "$status" -eq 0 ] || fail "stats status $status: $output"
	read -r name pids usage _ limit <<<"$output"
	[ "$name" = stat ] && [ "$pids" = "$(pid_cgroup_file "$pid" pids pids.current)" ] || fail "stats: $output"
	[[ "$usage" =~ ^[0-9.]+[kMG]?B$ ]] && [[ "$usage" != 0B ]] || fail "stats usage: $output"
	[[ "$limit" == 67.1* ]] || fail "stats limit: $output"

	# podman update hands brig the new linux.resources (`update --resources`).
	podman_cmd update --memory 96m --cpu-quota 40000 --cpu-period 100000 stat
	[ "$(pid_memory_limit "$pid")" = 100663296 ] || fail "memory after update: $(pid_memory_limit "$pid")"
	[ "$(pid_cpu_max "$pid")" = "40000 100000" ] || fail "cpu after update: $(pid_cpu_max "$pid")"
	[ "$(pid_pids_limit "$pid")" = 50 ] || fail "pids after update: $(pid_pids_limit "$pid")"
	podman_cmd rm -f -t 0 stat
}

@test "podman: rm removes the container from podman and from brig" {
	podman_cmd run -d --name gone "$PODMAN_IMAGE" sleep 1000
	id=$(full_id gone)
	pid=$(podman_cmd inspect --format '{{.State.Pid}}' gone)
	podman_cmd rm -f -t 0 gone
	run podman_cmd ps -a --format '{{.Names}}'
	[[ "$output" != *gone* ]] || fail "still listed: $output"
	run "$BRIG" state "$id"
	[ "$status" -ne 0 ] || fail "brig still knows $id: $output"
	[ ! -e "/proc/$pid" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != sleep ] || fail "process $pid survived"
}

# ----------------------------------------------------------------- limits ----

@test "podman: --memory 32m is enforced: an allocation past it is OOM-killed" {
	# The allocation waits until the limit has been read from the host.
	# tail keeps its whole input in memory: 64 MiB through a 32 MiB limit.
	podman_cmd run -d --name oom --memory 32m "$PODMAN_IMAGE" \
		sh -c 'until [ -e /tmp/go ]; do sleep 0.1; done; head -c 67108864 /dev/zero | tail >/dev/null'
	pid=$(podman_cmd inspect --format '{{.State.Pid}}' oom)
	[ "$(pid_memory_limit "$pid")" = 33554432 ] || fail "memory limit: $(pid_memory_limit "$pid")"
	podman_cmd exec oom touch /tmp/go
	run podman_cmd wait oom
	[ "$output" = 137 ] || fail "expected 137, got $output; logs: $(podman_cmd logs oom 2>&1)"
	podman_cmd rm oom
}

@test "podman: --pids-limit 20 is enforced" {
	podman_cmd run -d --name pids --pids-limit 20 "$PODMAN_IMAGE" sh -c '
		sh -c "for i in \$(seq 40); do sleep 100 & done" 2>/dev/null
		echo forked; exec sleep 1000'
	wait_for_log pids forked
	pid=$(podman_cmd inspect --format '{{.State.Pid}}' pids)
	[ "$(pid_pids_limit "$pid")" = 20 ] || fail "pids.max: $(pid_pids_limit "$pid")"
	cur=$(pid_cgroup_file "$pid" pids pids.current)
	[ "$cur" -le 20 ] && [ "$cur" -ge 10 ] || fail "pids.current: $cur"
	events=$(pid_cgroup_file "$pid" pids pids.events)
	[[ "$events" =~ max\ [1-9] ]] || fail "no fork was refused: $events"
	podman_cmd rm -f -t 0 pids
}

# --------------------------------------------------------------- security ----

@test "podman: --read-only makes / read-only, /tmp stays writable" {
	run podman_cmd run --rm --read-only "$PODMAN_IMAGE" sh -c 'touch /x 2>&1; echo rc=$?; touch /tmp/y && echo tmp-ok'
	[[ "$output" == *"Read-only file system"* ]] || fail "write to / did not fail as expected: $output"
	[[ "$output" == *"rc=1"* ]] && [[ "$output" == *tmp-ok* ]] || fail "$output"
}

@test "podman: --tmpfs starts as a copy of the directory it covers (tmpcopyup)" {
	run podman_cmd run --rm --tmpfs /home "$PODMAN_IMAGE" sh -c 'stat -c "%u %a" /home/user; grep -c tmpfs /proc/self/mountinfo; grep " /home " /proc/self/mountinfo'
	[ "${lines[0]}" = "1000 755" ] || fail "/home/user was not copied up: $output"
	[[ "$output" == *" /home "*tmpfs* ]] || fail "/home is not a tmpfs: $output"
}

@test "podman: --user 1000:1000" {
	run podman_cmd run --rm --user 1000:1000 "$PODMAN_IMAGE" sh -c 'id -u; id -g; touch /root/x 2>/dev/null || echo denied'
	[ "$(squeeze "$output")" = "1000 1000 denied" ] || fail "$output"
}

@test "podman: --cap-drop all and --cap-drop CHOWN" {
	run podman_cmd run --rm --cap-drop all "$PODMAN_IMAGE" grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status
	[ "$(printf '%s\n' "$output" | awk '{print $2}' | sort -u)" = 0000000000000000 ] || fail "caps left: $output"

	run podman_cmd run --rm --cap-drop CHOWN "$PODMAN_IMAGE" sh -c '
		grep ^CapEff: /proc/self/status
		chown 1000 /tmp 2>/dev/null && echo chown-ok || echo chown-denied'
	[[ "$output" == *chown-denied* ]] || fail "chown worked without CAP_CHOWN: $output"
	eff=$(printf '%s\n' "$output" | sed -n 's/^CapEff:[[:space:]]*//p')
	[ $((0x$eff & 1)) -eq 0 ] || fail "CAP_CHOWN still effective: $eff"
	[ $((0x$eff)) -ne 0 ] || fail "every capability was dropped: $eff"

	# The default set still has CAP_CHOWN.
	run podman_cmd run --rm "$PODMAN_IMAGE" sh -c 'chown 1000 /tmp && echo chown-ok'
	[ "$output" = chown-ok ] || fail "default caps: $output"
}

@test "podman: the default run is under podman's seccomp filter; seccomp=unconfined is not" {
	run podman_cmd run --rm "$PODMAN_IMAGE" grep ^Seccomp: /proc/self/status
	[ "$(squeeze "$output")" = "Seccomp: 2" ] || fail "default profile not applied: $output"
	run podman_cmd run --rm --security-opt seccomp=unconfined "$PODMAN_IMAGE" grep ^Seccomp: /proc/self/status
	[ "$(squeeze "$output")" = "Seccomp: 0" ] || fail "unconfined: $output"
}

@test "podman: --security-opt seccomp=PROFILE blocks the syscalls it names" {
	profile=$BATS_TEST_TMPDIR/no-mkdir.json
	no_mkdir_profile "$profile"
	run podman_cmd run --rm --security-opt "seccomp=$profile" "$PODMAN_IMAGE" \
		sh -c 'mkdir /tmp/d 2>&1; echo rc=$?; touch /tmp/f && echo touch-ok'
	[[ "$output" == *"Operation not permitted"* && "$output" == *"rc=1"* ]] || fail "mkdir was not blocked: $output"
	[[ "$output" == *touch-ok* ]] || fail "other syscalls were blocked too: $output"
}

# ---------------------------------------------------------------- cleanup ----

@test "podman: rm --all leaves no container in podman or in brig" {
	podman_cmd run -d --name last1 "$PODMAN_IMAGE" sleep 1000
	podman_cmd create --name last2 "$PODMAN_IMAGE" true
	podman_cmd rm --all --force --time 0
	run podman_cmd ps -a -q
	[ -z "$output" ] || fail "podman still lists: $output"
	run "$BRIG" list -q
	[ -z "$output" ] || fail "brig still lists: $output"
}
