#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # jq programs, bats' own variables
# The systemd cgroup driver (--systemd-cgroup, cgroupsPath slice:prefix:name):
# brig directly, podman with its defaults, and containerd with SystemdCgroup,
# each read back from systemd (`systemctl show`) and from the cgroup files.
# The same checks run against runc in the same machine, as the reference.
#
# It needs systemd as PID 1 on cgroup v2: tests/check-integration.sh runs it
# in the test VM booted with systemd (tests/vm/run.sh --systemd).

load helpers
load podman-helpers
load containerd-helpers
load cri-helpers
load systemd-helpers

setup_file() {
	[ "$(cat /proc/1/comm)" = systemd ] || return 0
	export PODMAN_DIR=$BATS_FILE_TMPDIR/podman
	podman_setup_store "$PODMAN_DIR"
	# podman's defaults: no cgroup_manager line, so systemd's
	sed -i '/^[[:space:]]*cgroup_manager/d' "$PODMAN_DIR/containers.conf"
	ln -sf "$RUNC" "$PODMAN_DIR/runc"
}

teardown_file() {
	[ "$(cat /proc/1/comm)" = systemd ] || return 0
	podman_sd rm --all --force --time 0 >/dev/null 2>&1 || true
}

# check_scope RUNTIME: the scope exists with the limits, where the runtime
# put the init, in systemd's words and in the files.
check_scope() {
	local r=$1 unit=brigtest-$CID.scope pid dir
	limited_bundle "system.slice:brigtest:$CID"
	rt_detached "$r" run -d "$CID"
	pid=$(rt "$r" state "$CID" | jq -r .pid)
	[ "$(show "$unit" ActiveState)" = active ] || fail "$unit: $(systemctl status "$unit" 2>&1)"
	[ "$(show "$unit" ControlGroup)" = "/system.slice/$unit" ]
	grep -qx "0::/system.slice/$unit" "/proc/$pid/cgroup" || fail "init in $(cat "/proc/$pid/cgroup")"
	[ "$(show "$unit" Delegate)" = yes ]
	[ "$(show "$unit" MemoryMax)" = 67108864 ]
	[ "$(show "$unit" MemoryLow)" = 33554432 ]
	[ "$(show "$unit" TasksMax)" = 64 ]
	[ "$(show "$unit" CPUQuotaPerSecUSec)" = 130ms ]
	[ "$(show "$unit" AllowedCPUs)" = 0 ]
	dir=$(scope_dir "$unit")
	[ "$(cat "$dir/memory.max")" = 67108864 ]
	[ "$(cat "$dir/pids.max")" = 64 ]
	# what was asked, not systemd's whole percent
	[ "$(cat "$dir/cpu.max")" = "12345 100000" ]
	echo "$r: $(systemctl show -p MemoryMax,TasksMax,CPUQuotaPerSecUSec,CPUWeight "$unit" | tr '\n' ' ')"
}

@test "brig --systemd-cgroup: a transient scope with the limits, where runc puts it" {
	check_scope brig
	# brig-specific: the weight systemd holds is the shares' (2048 → 79)
	[ "$(show "brigtest-$CID.scope" CPUWeight)" = 79 ]
	[ "$(show "brigtest-$CID.scope" DevicePolicy)" = strict ]
}

@test "runc --systemd-cgroup (reference): the same scope and limits" {
	check_scope runc
}

# check_lifecycle RUNTIME: exec, pause, ps, update, kill --all, delete.
check_lifecycle() {
	local r=$1 unit=brigtest-$CID.scope pid dir
	limited_bundle "system.slice:brigtest:$CID"
	rt_detached "$r" run -d "$CID"
	dir=$(scope_dir "$unit")
	# exec joins the scope
	run rt "$r" exec "$CID" cat /proc/self/cgroup
	[ "$status" -eq 0 ]
	[ "$output" = "0::/" ] || [ "$output" = "0::/system.slice/$unit" ]
	# devices the container needs pass systemd's device policy too
	rt "$r" exec "$CID" sh -c 'echo x >/dev/null && head -c1 /dev/zero | wc -c'
	rt "$r" pause "$CID"
	[ "$(cat "$dir/cgroup.freeze")" = 1 ]
	[ "$(rt "$r" state "$CID" | jq -r .status)" = paused ]
	rt "$r" resume "$CID"
	[ "$(cat "$dir/cgroup.freeze")" = 0 ]
	run rt "$r" ps "$CID"
	[ "$status" -eq 0 ]
	[[ "$output" == *sleep* ]]
	rt "$r" update --memory 268435456 --pids-limit 50 "$CID"
	[ "$(show "$unit" MemoryMax)" = 268435456 ]
	[ "$(show "$unit" TasksMax)" = 50 ]
	[ "$(cat "$dir/memory.max")" = 268435456 ]
	[ "$(cat "$dir/pids.max")" = 50 ]
	rt "$r" kill --all "$CID" KILL
	wait_for_status_of "$r" stopped
	rt "$r" delete "$CID"
	# the unit is gone, and its cgroup
	[ "$(show "$unit" LoadState)" = not-found ] || fail "$unit: $(show "$unit" LoadState)"
	[ ! -d "$dir" ]
}

@test "brig --systemd-cgroup: exec, pause, ps, update, kill --all and delete find the scope" {
	check_lifecycle brig
}

@test "runc --systemd-cgroup (reference): exec, pause, ps, update, kill --all and delete" {
	check_lifecycle runc
}

# check_stopped_outside RUNTIME: `systemctl stop` of the unit behind the
# runtime's back; the container is then still deletable.
check_stopped_outside() {
	local r=$1 unit=brigtest-$CID.scope
	limited_bundle "system.slice:brigtest:$CID"
	# An init that ends on SIGTERM, as a service's does: sleep as PID 1
	# ignores it, and systemd would wait its 90 s stop timeout to kill.
	# The stop waits for the sleep: by then the trap is set.
	update_config '.process.args = ["sh", "-c", "trap \"exit 143\" TERM; sleep 1000 & wait"]'
	rt_detached "$r" run -d "$CID"
	local pid
	pid=$(rt "$r" state "$CID" | jq -r .pid)
	for _ in $(seq 100); do
		pgrep -P "$pid" >/dev/null && break
		sleep 0.1
	done
	systemctl stop "$unit"
	wait_for_status_of "$r" stopped
	rt "$r" delete "$CID"
	if [ "$r" = runc ]; then
		# runc 1.1 leaves drop-ins behind that keep the unit loaded
		[ "$(show "$unit" ActiveState)" != active ]
	else
		[ "$(show "$unit" LoadState)" = not-found ]
	fi
	[ ! -d "/sys/fs/cgroup/system.slice/$unit" ]
}

@test "brig --systemd-cgroup: a unit stopped from outside leaves a deletable container" {
	check_stopped_outside brig
	assert_no_leftovers "$CID"
}

@test "runc --systemd-cgroup (reference): a unit stopped from outside" {
	check_stopped_outside runc
}

@test "brig --systemd-cgroup: a nested slice is made under its parents, and the default slice" {
	update_config '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = $p' \
		--arg p "brigtest-pod1.slice:cri:$CID"
	brig_detached --systemd-cgroup run -d "$CID"
	[ "$(show "cri-$CID.scope" ControlGroup)" = "/brigtest.slice/brigtest-pod1.slice/cri-$CID.scope" ]
	[ "$(show brigtest-pod1.slice ActiveState)" = active ]
	[ "$(show "cri-$CID.scope" Slice)" = brigtest-pod1.slice ]
	brig delete --force "$CID"
	update_config '.linux.cgroupsPath = $p' --arg p ":cri:$CID"
	brig_detached --systemd-cgroup run -d "$CID"
	[ "$(show "cri-$CID.scope" ControlGroup)" = "/system.slice/cri-$CID.scope" ]
	brig delete --force "$CID"
	# no cgroupsPath at all: :brig:<id>
	update_config 'del(.linux.cgroupsPath)'
	brig_detached --systemd-cgroup run -d "$CID"
	[ "$(show "brig-$CID.scope" ControlGroup)" = "/system.slice/brig-$CID.scope" ]
	brig delete --force "$CID"
	[ "$(show "brig-$CID.scope" LoadState)" = not-found ]
	systemctl stop brigtest.slice
}

@test "brig --systemd-cgroup: org.systemd.property.* annotations become unit properties" {
	update_config '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = $p
		| .annotations["org.systemd.property.TimeoutStopSec"] = "17"
		| .annotations["org.systemd.property.CollectMode"] = "\u0027inactive-or-failed\u0027"
		| .annotations["org.systemd.property.RuntimeMaxUSec"] = "uint64 3600000000"' \
		--arg p "system.slice:brigtest:$CID"
	brig_detached --systemd-cgroup run -d "$CID"
	[ "$(show "brigtest-$CID.scope" TimeoutStopUSec)" = 17s ]
	[ "$(show "brigtest-$CID.scope" CollectMode)" = inactive-or-failed ]
	[ "$(show "brigtest-$CID.scope" RuntimeMaxUSec)" = 1h ]
}

@test "brig --systemd-cgroup: bad cgroupsPath and bad annotations are one line, nothing left" {
	update_config '.linux.cgroupsPath = "not/a/slice"'
	run --separate-stderr brig --systemd-cgroup run "$CID"
	assert_one_line_error "slice:prefix:name"
	assert_no_leftovers "$CID"
	update_config '.linux.cgroupsPath = $p | .annotations["org.systemd.property.CPUWeight"] = "[1,"' \
		--arg p "system.slice:brigtest:$CID"
	run --separate-stderr brig --systemd-cgroup run "$CID"
	assert_one_line_error "org.systemd.property.CPUWeight"
	assert_no_leftovers "$CID"
	[ "$(show "brigtest-$CID.scope" LoadState)" = not-found ]
	[ ! -d "/sys/fs/cgroup/system.slice/brigtest-$CID.scope" ]
	# a unit systemd refuses: the create fails, and nothing is left
	update_config 'del(.annotations) | .annotations["org.systemd.property.NoSuchProperty"] = "true"'
	run --separate-stderr brig --systemd-cgroup run "$CID"
	assert_one_line_error "NoSuchProperty"
	assert_no_leftovers "$CID"
	[ ! -d "/sys/fs/cgroup/system.slice/brigtest-$CID.scope" ]
}

@test "brig --systemd-cgroup: the memory limit holds inside (OOM kill in the scope)" {
	update_config '.process.args = ["sh", "-c", "x=$(head -c 100000000 /dev/zero | tr \\\\0 a); echo survived"]
		| .linux.cgroupsPath = $p | .linux.resources.memory = { limit: 33554432, swap: 33554432 }' \
		--arg p "system.slice:brigtest:$CID"
	run brig --systemd-cgroup run "$CID"
	[ "$status" -ne 0 ]
	[[ "$output" != *survived* ]]
}

@test "brig --systemd-cgroup: checkpoint, then restore starts the scope again with the limits" {
	command -v criu >/dev/null || PATH=$PATH:/usr/sbin
	local unit=brigtest-$CID.scope img=$BATS_TEST_TMPDIR/img data=$BATS_TEST_TMPDIR/data pid n
	mkdir -p "$data"
	add_bind_mount "$data" /mnt/data
	limited_bundle "system.slice:brigtest:$CID"
	set_args sh -c 'i=0; while :; do i=$((i+1)); echo $i >>/mnt/data/log; sleep 0.2; done'
	brig_detached --systemd-cgroup run -d "$CID"
	for _ in $(seq 100); do [ "$(tail -n1 "$data/log" 2>/dev/null || echo 0)" -gt 2 ] && break; sleep 0.2; done
	brig checkpoint --image-path "$img" "$CID"
	[ "$(show "$unit" LoadState)" = not-found ]
	brig_detached --systemd-cgroup restore -d --image-path "$img" "$CID"
	pid=$(brig state "$CID" | jq -r .pid)
	[ "$(show "$unit" ActiveState)" = active ]
	grep -qx "0::/system.slice/$unit" "/proc/$pid/cgroup" || fail "restored init in $(cat "/proc/$pid/cgroup")"
	[ "$(show "$unit" MemoryMax)" = 67108864 ]
	[ "$(cat "$(scope_dir "$unit")/pids.max")" = 64 ]
	# the restored counter goes on, under systemd's pids limit
	[ "$(show "$unit" TasksMax)" = 64 ]
	n=$(tail -n1 "$data/log")
	for _ in $(seq 100); do [ "$(tail -n1 "$data/log")" -gt $((n + 1)) ] && break; sleep 0.2; done
	[ "$(tail -n1 "$data/log")" -gt $((n + 1)) ]
	brig delete --force "$CID"
	[ "$(show "$unit" LoadState)" = not-found ]
}

# ---- podman with its defaults: the systemd manager ----

# podman_sd ARGS...: the private podman store, podman's own cgroup manager
# default (systemd here), brig or runc as its runtime (PODMAN_RUNTIME).
podman_sd() {
	CONTAINERS_CONF=$PODMAN_DIR/containers.conf \
		timeout -k 5 180 podman \
		--root "$PODMAN_DIR/storage" --runroot "$PODMAN_DIR/runroot" \
		--tmpdir "$PODMAN_DIR/tmp" --storage-driver vfs \
		--runtime "$PODMAN_DIR/${PODMAN_RUNTIME:-brig}" --events-backend file "$@"
}

# check_podman RUNTIME: a limited container where podman's defaults put it.
check_podman() {
	local name=sd-$1-$RANDOM id unit dir
	PODMAN_RUNTIME=$1
	[ "$(podman_sd info --format '{{.Host.CgroupManager}}')" = systemd ]
	podman_sd run -d --name "$name" --memory 64m --pids-limit 40 --cpus 0.5 \
		"$PODMAN_IMAGE" sleep 1000
	id=$(podman_sd inspect --format '{{.Id}}' "$name")
	unit=libpod-$id.scope
	[ "$(show "$unit" ActiveState)" = active ]
	[ "$(show "$unit" ControlGroup)" = "/machine.slice/$unit" ]
	[ "$(show "$unit" MemoryMax)" = 67108864 ]
	[ "$(show "$unit" TasksMax)" = 40 ]
	dir=$(scope_dir "$unit")
	[ "$(cat "$dir/cpu.max")" = "50000 100000" ]
	run podman_sd exec "$name" cat /sys/fs/cgroup/memory.max
	[ "$output" = 67108864 ]
	run podman_sd stats --no-stream --format '{{.MemUsage}}' "$name"
	[ "$status" -eq 0 ]
	[[ "$output" == *"64MB"* ]] || [[ "$output" == *"67.11MB"* ]] || fail "stats: $output"
	podman_sd pause "$name"
	[ "$(cat "$dir/cgroup.freeze")" = 1 ]
	podman_sd unpause "$name"
	podman_sd rm --force --time 0 "$name"
	[ "$(show "$unit" LoadState)" = not-found ]
}

@test "podman (systemd manager, its default) with brig: limits, stats, pause" {
	check_podman brig
}

@test "podman (systemd manager) with runc (reference): limits, stats, pause" {
	check_podman runc
}

# ---- containerd with SystemdCgroup ----

# check_containerd RUNTIME-ARGS...: ctr run with the systemd cgroup path.
check_containerd() {
	local task=$1 unit
	shift
	unit=brigctr-$task.scope
	ctrd run -d "$@" --cgroup "system.slice:brigctr:$task" --memory-limit 67108864 \
		"$CTRD_IMAGE" "$task" sleep 1000
	wait_for_status "$task" RUNNING
	[ "$(show "$unit" ActiveState)" = active ]
	[ "$(show "$unit" MemoryMax)" = 67108864 ]
	grep -qx "0::/system.slice/$unit" "/proc/$(task_pid_of "$task")/cgroup"
	ctrd task kill -s KILL "$task"
	wait_for_status "$task" STOPPED
	ctrd task delete "$task"
	ctrd container rm "$task"
	[ "$(show "$unit" LoadState)" = not-found ]
}

task_pid_of() {
	ctrd task ls | awk -v t="$1" '$1 == t { print $2 }'
}

@test "containerd: io.containerd.brig.v2 with SystemdCgroup = true, and runc's as the reference" {
	SHIM_DIR=$(dirname "$BRIG")
	CTRD_DIR=$(mktemp -d /run/brig-sdtest.XXXXXX)
	containerd_start "$CTRD_DIR"
	containerd_import_busybox
	echo 'SystemdCgroup = true' >"$CTRD_DIR/brig-options.toml"
	check_containerd "sdb$RANDOM" --runtime io.containerd.brig.v2 \
		--runtime-config-path "$CTRD_DIR/brig-options.toml"
	check_containerd "sdr$RANDOM" --runtime io.containerd.runc.v2 --runc-systemd-cgroup
	containerd_stop
	rm -rf "$CTRD_DIR"
}

# ---- Kubernetes: containerd's CRI plugin with SystemdCgroup ----

@test "CRI with SystemdCgroup (kubeadm's node): a pod's containers are scopes in its slice, brig and runc" {
	local h cid unit
	export CRI_SYSTEMD=1
	cri_start
	for h in brig runc; do
		run_pod "sd-$h" "$h"
		cid=$(run_container app sleep 1000)
		unit=cri-containerd-$cid.scope
		[ "$(show "$unit" ActiveState)" = active ] || fail "$h: $unit is $(show "$unit" ActiveState)"
		[ "$(show "$unit" ControlGroup)" = "$POD_CGROUP/$unit" ] ||
			fail "$h: $unit in $(show "$unit" ControlGroup), not $POD_CGROUP"
		[ "$(show "cri-containerd-$POD_ID.scope" ActiveState)" = active ] || fail "$h: the pause container's scope"
		container_request UpdateContainerResources "$cid" '{"linux": {"memory_limit_in_bytes": 67108864}}' >/dev/null
		[ "$(show "$unit" MemoryMax)" = 67108864 ] || fail "$h: MemoryMax $(show "$unit" MemoryMax)"
		[ "$(cat "/sys/fs/cgroup$POD_CGROUP/$unit/memory.max")" = 67108864 ]
		pod_request StopPodSandbox >/dev/null
		pod_request RemovePodSandbox >/dev/null
		[ "$(show "$unit" LoadState)" = not-found ] || fail "$h: $unit is $(show "$unit" LoadState) after removal"
		[ -z "$(pod_shims "$POD_ID")" ]
	done
	cri_stop
	systemctl stop kubepods.slice
}
