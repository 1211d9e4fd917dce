#!/usr/bin/env bats
# cgroup v2 limits the kernel enforces. Needs a v2 hierarchy with the
# memory, pids, cpu, io and cpuset controllers: `make check` runs this file
# in the test VM (tests/vm/) on hosts that lack them.

load helpers

setup() {
	for c in memory pids cpu io cpuset; do
		has_controller "$c" || fail "no $c controller here: run this file in the VM (tests/vm/run.sh)"
	done
	setup_bundle
}

@test "a memory limit OOM-kills a process that allocates past it, and events reports it" {
	update_config '.linux.resources.memory = {limit: 33554432, swap: 33554432}'
	mkdir -p "$BATS_TEST_TMPDIR/out"
	add_bind_mount "$BATS_TEST_TMPDIR/out" /out
	# tail keeps its whole input in memory: 64 MiB through a 32 MiB limit.
	set_args sh -c 'sleep 3; head -c 67108864 /dev/zero | tail >/dev/null; echo "status=$?" >/out/status; sleep 100'
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/memory.max")" = 33554432 ]
	[ "$(cat "$cg/memory.swap.max")" = 0 ]
	timeout 30 "$BRIG" --root "$ROOT" events --interval 1s "$CID" >"$BATS_TEST_TMPDIR/events" &
	events_pid=$!
	wait_for_file "$BATS_TEST_TMPDIR/out/status"
	grep -q "status=137" "$BATS_TEST_TMPDIR/out/status" || fail "tail was not killed: $(cat "$BATS_TEST_TMPDIR/out/status")"
	grep -q "^oom_kill [1-9]" "$cg/memory.events"
	for _ in $(seq 50); do
		grep -q '"type":"oom"' "$BATS_TEST_TMPDIR/events" && break
		sleep 0.2
	done
	kill "$events_pid" 2>/dev/null || true
	grep -q "{\"type\":\"oom\",\"id\":\"$CID\"}" "$BATS_TEST_TMPDIR/events" || fail "events: $(cat "$BATS_TEST_TMPDIR/events")"
	# The container itself lives on.
	[ "$(container_status "$CID")" = running ]
}

@test "a pids limit stops a fork bomb and the container stays manageable" {
	update_config '.linux.resources.pids = {limit: 20}'
	# The bomb runs in a child shell (a shell may give up when fork fails);
	# the init itself stays, so the container does too.
	set_args sh -c 'sh -c "for i in \$(seq 100); do sleep 300 & done" 2>/dev/null; exec sleep 300'
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/pids.max")" = 20 ]
	sleep 3
	n=$(brig ps -f json "$CID" | jq length)
	[ "$n" -le 20 ] || fail "$n processes past a limit of 20"
	[ "$n" -ge 10 ] || fail "only $n processes: the loop did not run"
	grep -q "^max [1-9]" "$cg/pids.events"
	brig delete -f "$CID"
	[ ! -e "$cg" ]
}

@test "cpu.max holds a busy loop to its quota within 20%" {
	update_config '.linux.resources.cpu = {quota: 20000, period: 100000}'
	set_args sh -c 'while :; do :; done'
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/cpu.max")" = "20000 100000" ]
	u0=$(awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat")
	t0=$(date +%s%N)
	sleep 5
	u1=$(awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat")
	t1=$(date +%s%N)
	# share of one cpu, in percent
	share=$(( (u1 - u0) * 100000 / ((t1 - t0) / 1000) ))
	[ "$share" -ge 16000 ] && [ "$share" -le 24000 ] || fail "busy loop used $((share / 1000))% of a cpu, quota 20%"
}

@test "cpu shares become cpu.weight, cpus and mems become the cpuset" {
	update_config '.linux.resources.cpu = {shares: 1024, cpus: "0", mems: "0", burst: 1000, idle: 0}'
	set_args sleep 100
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/cpu.weight")" = 39 ]
	[ "$(cat "$cg/cpuset.cpus")" = 0 ]
	[ "$(cat "$cg/cpuset.mems")" = 0 ]
	[ "$(cat "$cg/cpu.max.burst")" = 1000 ]
}

@test "io weights and io.max throttles are in the cgroup files" {
	# blkio weight 500 → 1 + (500 - 10) * 9999 / 990 = 4950
	[ -e /sys/block/loop0 ] || modprobe loop
	maj=$(cut -d: -f1 /sys/block/loop0/dev)
	min=$(cut -d: -f2 /sys/block/loop0/dev)
	update_config '.linux.resources.blockIO = {weight: 500,
		throttleReadBpsDevice: [{major: $a, minor: $b, rate: 1048576}],
		throttleWriteIOPSDevice: [{major: $a, minor: $b, rate: 100}]}' \
		--argjson a "$maj" --argjson b "$min"
	set_args sleep 100
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	grep -qx "default 4950" "$cg/io.weight" || fail "io.weight: $(cat "$cg/io.weight")"
	grep -q "^$maj:$min rbps=1048576 wbps=max riops=max wiops=100" "$cg/io.max" || fail "io.max: $(cat "$cg/io.max")"
}

@test "update changes live limits" {
	update_config '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 50}'
	set_args sleep 100
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	brig update --memory 96m --pids-limit 30 --cpu-quota 50000 --cpu-period 100000 "$CID"
	[ "$(cat "$cg/memory.max")" = 100663296 ]
	[ "$(cat "$cg/pids.max")" = 30 ]
	[ "$(cat "$cg/cpu.max")" = "50000 100000" ]
	echo '{"pids": {"limit": 7}}' | brig update -r - "$CID"
	[ "$(cat "$cg/pids.max")" = 7 ]
	run --separate-stderr brig update --memory lots "$CID"
	assert_one_line_error lots
}

@test "a unified key is written as given" {
	update_config '.linux.resources.unified = {"memory.high": "50331648", "pids.max": "11"}'
	set_args sleep 100
	brig_detached run -d "$CID"
	cg=$(container_cgroup "$CID")
	[ "$(cat "$cg/memory.high")" = 50331648 ]
	[ "$(cat "$cg/pids.max")" = 11 ]
}

@test "a unified key that leaves the cgroup is refused" {
	update_config '.linux.resources.unified = {"../cgroup.procs": "1"}'
	set_args true
	run --separate-stderr brig run "$CID"
	assert_one_line_error cgroup.procs
	assert_no_leftovers "$CID"
}

@test "events --stats reports the memory limit and the pids of the container" {
	update_config '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 50}'
	# sh runs the last command in its own process: sh + 2 × sleep.
	set_args sh -c 'sleep 100 & sleep 100 & wait'
	brig_detached run -d "$CID"
	sleep 1
	run brig events --stats "$CID"
	[ "$status" -eq 0 ]
	jq -e '.data.memory.usage.limit == 67108864 and .data.pids.limit == 50 and .data.pids.current == 3' <<<"$output" >/dev/null || fail "stats: $output"
}

@test "containers created at once under a new parent cgroup all get their limits" {
	# The parent does not exist yet: one create makes it and enables pids
	# there while the others make their own cgroups beside and write
	# pids.max; every one must end up with its limit.
	update_config '.linux.resources.pids = {limit: 77}'
	set_args sleep 100
	parent=brigrace-$CID
	for i in $(seq 24); do
		mkdir -p "$BATS_TEST_TMPDIR/b$i"
		jq --arg p "/$parent/c$i" --arg r "$ROOTFS" '.linux.cgroupsPath = $p | .root.path = $r' \
			"$BUNDLE/config.json" >"$BATS_TEST_TMPDIR/b$i/config.json"
	done
	pids=()
	for i in $(seq 24); do
		"$BRIG" --root "$ROOT" run -d --bundle "$BATS_TEST_TMPDIR/b$i" "$CID-$i" </dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/err$i" &
		pids+=($!)
	done
	failed=0
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	[ "$failed" -eq 0 ] || fail "$failed creates failed: $(cat "$BATS_TEST_TMPDIR"/err* | sort | uniq -c)"
	for i in $(seq 24); do
		[ "$(cat "$(cgroup_v2_root)/$parent/c$i/pids.max")" = 77 ] || fail "c$i has no limit"
	done
	for i in $(seq 24); do brig delete -f "$CID-$i"; done
	rmdir "$(cgroup_v2_root)/$parent" 2>/dev/null || true
}
