#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2154 # shell programs run inside the containers; bats variables
# brig as a Kubernetes node runs it: containerd's CRI plugin driven through
# the runtime.v1 gRPC API (tests/tools/cri/cri.py), as the kubelet does,
# pods asking for the RuntimeClass handler "brig" (io.containerd.brig.v2).
# A private containerd with the CRI plugin for the file (cri-helpers.bash):
# busybox images imported, a pod network of the file's own, cgroups
# through cgroupfs with the kubelet's pod cgroup parents.
#
# CRI_HANDLER picks the handler of the tests (brig; runc when BRIG names
# runc: `BRIG=/usr/sbin/runc tests/integration/run.sh cri.bats` validates
# the tests on containerd's own runtime). One test always runs runc, as
# the reference the brig runs compare with.

load helpers
load containerd-helpers
load cri-helpers

setup_file() {
	if [ "$CRI_HANDLER" != runc ]; then
		SHIM_DIR=${SHIM_DIR:-$(dirname "$BRIG")}
		[ -x "$SHIM_DIR/containerd-shim-brig-v2" ] ||
			fail "no containerd-shim-brig-v2 in $SHIM_DIR (build it, or set SHIM_DIR)" || return
	fi
	cri_start
}

teardown_file() {
	cri_stop
}

setup() {
	:
}

# Every pod a test leaves is stopped and removed, as the kubelet would. A
# failed test shows what containerd complained of.
teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${CTRD_DIR:-}" ]; then
		echo "# containerd's errors and warnings:" >&2
		grep -E 'level=(error|warning)' "$CTRD_DIR/containerd.log" | grep -v devmapper | tail -n 20 >&2
	fi
	cri_remove_all_pods
}

# ctrd_task_pid ID: the pid of a task (a pod's pause container or a
# container) as containerd lists it.
ctrd_task_pid() {
	ctrd task ls | awk -v t="$1" '$1 == t { print $2 }'
}

# shim_binary HANDLER: the shim a runtime handler starts.
shim_binary() {
	case $1 in
	runc) echo containerd-shim-runc-v2 ;;
	*) echo containerd-shim-brig-v2 ;;
	esac
}

# in_pod_cgroup PID: PID's cgroup (on v1, in the memory hierarchy) is
# below the pod's cgroup parent.
in_pod_cgroup() {
	local path
	path=$(awk -F: '$2 == "memory" { print $3; exit }' "/proc/$1/cgroup")
	[ -n "$path" ] || path=$(sed -n 's/^0:://p' "/proc/$1/cgroup")
	[[ "$path" == "$POD_CGROUP"/* ]] || fail "pid $1: memory cgroup $path, not below $POD_CGROUP"
}

# pod_lifecycle HANDLER: a pod and a container on HANDLER through their
# whole life, and nothing left of them. The runs of both handlers.
pod_lifecycle() {
	local h=$1 cid out pid
	run_pod "life-$h" "$h"
	out=$(pod_request PodSandboxStatus)
	jq -e --arg h "$h" '.status.state == "SANDBOX_READY" and .status.runtime_handler == $h' <<<"$out" >/dev/null ||
		fail "PodSandboxStatus: $out"
	pgrep -f "$(shim_binary "$h") .*-id $POD_ID( |$)" >/dev/null || fail "no $(shim_binary "$h") for the pod"
	cid=$(run_container c1 sleep 1000)
	[ "$(container_state "$cid")" = CONTAINER_RUNNING ]
	pid=$(container_info_pid "$cid")
	in_pod_cgroup "$pid"
	out=$(exec_sync "$cid" sh -c 'echo out; echo err >&2; exit 5')
	[ "$out" = '{"stdout":"out\n","stderr":"err\n","exit_code":5}' ] || fail "ExecSync: $out"
	container_request StopContainer "$cid" '{"timeout": 1}' >/dev/null
	out=$(container_request ContainerStatus "$cid")
	# sleep is the container's pid 1, which SIGTERM doesn't kill without a
	# handler: SIGKILL after the timeout, 128 + 9.
	jq -e '.status.state == "CONTAINER_EXITED" and .status.exit_code == 137' <<<"$out" >/dev/null ||
		fail "ContainerStatus after StopContainer: $out"
	pod_request StopPodSandbox >/dev/null
	pod_request RemovePodSandbox >/dev/null
	for _ in $(seq 1 50); do
		[ -z "$(pod_shims "$POD_ID")" ] && break
		sleep 0.1
	done
	[ -z "$(pod_shims "$POD_ID")" ] || fail "a shim outlived the pod: $(pod_shims "$POD_ID")"
	run ! kill -0 "$pid"
	[ -z "$(pod_cgroup_children)" ] || fail "cgroups left: $(pod_cgroup_children)"
}

@test "cri: Version, the runtime ready, the imported images listed" {
	run cri Version '{"version": "v1"}'
	[ "$status" -eq 0 ] || fail "Version: $output"
	jq -e '.runtime_name == "containerd" and .runtime_api_version == "v1"' <<<"$output" >/dev/null
	run cri Status
	[ "$status" -eq 0 ]
	# RuntimeReady and NetworkReady (containerd 1.7 and 2.x add a condition
	# of their own about deprecations).
	jq -e '[.status.conditions[] | select(.status) | .type] | index("RuntimeReady") != null
		and index("NetworkReady") != null' <<<"$output" >/dev/null || fail "Status: $output"
	run cri ListImages
	[ "$status" -eq 0 ]
	jq -e --arg b "$CTRD_IMAGE" --arg p "$CRI_PAUSE_IMAGE" \
		'[.images[].repo_tags[]] | index($b) != null and index($p) != null' <<<"$output" >/dev/null ||
		fail "ListImages: $output"
	# An error of the API: one line, the method and the gRPC code.
	run --separate-stderr cri ContainerStatus '{"container_id": "no-such-container"}'
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "cri.py: ContainerStatus: NOT_FOUND: "* ]] || fail "stderr: $stderr"
}

@test "cri: RunPodSandbox with a cgroupfs parent: READY, an address, the pause process in the pod's cgroup, one shim" {
	run_pod pod1
	out=$(pod_request PodSandboxStatus)
	jq -e --arg h "$CRI_HANDLER" '.status.state == "SANDBOX_READY" and .status.runtime_handler == $h
		and (.status.network.ip | startswith("10.213.0."))
		and .status.linux.namespaces.options.network == "POD"
		and .status.linux.namespaces.options.ipc == "POD"' <<<"$out" >/dev/null ||
		fail "PodSandboxStatus: $out"
	run cri ListPodSandbox
	[ "$(jq -r --arg i "$POD_ID" '.items[] | select(.id == $i) | .state' <<<"$output")" = SANDBOX_READY ]
	pid=$(ctrd_task_pid "$POD_ID")
	[ -n "$pid" ] || fail "no task for the pod: $(ctrd task ls)"
	in_pod_cgroup "$pid"
	[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep infinity " ]
	[ "$(pod_shims "$POD_ID" | wc -l)" -eq 1 ] || fail "shims: $(pod_shims "$POD_ID")"
	pgrep -f "$(shim_binary "$CRI_HANDLER") .*-id $POD_ID( |$)" >/dev/null
}

@test "cri: CreateContainer, StartContainer: RUNNING; ExecSync: its output and exit code" {
	run_pod pod2
	cid=$(run_container sleeper sleep 1000)
	out=$(container_request ContainerStatus "$cid")
	jq -e --arg i "$cid" --arg img "$CTRD_IMAGE" '.status.id == $i and .status.state == "CONTAINER_RUNNING"
		and (.status.created_at | tonumber) > 0 and (.status.started_at | tonumber) > 0
		and .status.finished_at == "0" and .status.image.image == $img' <<<"$out" >/dev/null ||
		fail "ContainerStatus: $out"
	run cri ListContainers "$(jq -cn --arg p "$POD_ID" '{filter: {pod_sandbox_id: $p}}')"
	[ "$(jq -r '[.containers[] | .id + " " + .state] | join(",")' <<<"$output")" = "$cid CONTAINER_RUNNING" ]
	out=$(exec_sync "$cid" id -u)
	[ "$out" = '{"stdout":"0\n","stderr":"","exit_code":0}' ] || fail "id -u: $out"
	out=$(exec_sync "$cid" sh -c 'exit 3')
	[ "$(jq .exit_code <<<"$out")" -eq 3 ] || fail "exit 3: $out"
	out=$(exec_sync "$cid" sh -c 'echo to-out; echo to-err >&2')
	[ "$out" = '{"stdout":"to-out\n","stderr":"to-err\n","exit_code":0}' ] || fail "stdout and stderr: $out"
	# The exec ran in the container: it sees the container's sleep.
	out=$(exec_sync "$cid" cat /proc/1/cmdline)
	[ "$(jq -r .stdout <<<"$out" | tr '\0' ' ')" = "sleep 1000 " ] || fail "pid 1: $out"
	in_pod_cgroup "$(container_info_pid "$cid")"
}

@test "cri: two containers of a pod share its network and IPC namespaces (and talk on 127.0.0.1)" {
	run_pod pod3
	c1=$(run_container one sleep 1000)
	# The server's stdin a pipe that stays open: busybox nc may quit at
	# the end of its stdin (/dev/null for a CRI container) before it reads
	# what came in.
	c2=$(run_container server sh -c 'sleep 1000 | nc -l -p 8080')
	ns1=$(exec_sync "$c1" sh -c 'readlink /proc/self/ns/net; readlink /proc/self/ns/ipc; hostname')
	ns2=$(exec_sync "$c2" sh -c 'readlink /proc/self/ns/net; readlink /proc/self/ns/ipc; hostname')
	[ "$(jq .exit_code <<<"$ns1")" -eq 0 ] || fail "exec in one: $ns1"
	[ "$(jq -r .stdout <<<"$ns1")" = "$(jq -r .stdout <<<"$ns2")" ] || fail "one: $ns1, server: $ns2"
	[ "$(jq -r .stdout <<<"$ns1" | sed -n 3p)" = pod3 ]
	# The pod's, not the host's.
	[ "$(jq -r .stdout <<<"$ns1" | sed -n 1p)" != "$(readlink /proc/self/ns/net)" ]
	[ "$(jq -r .stdout <<<"$ns1" | sed -n 2p)" != "$(readlink /proc/self/ns/ipc)" ]
	# The pause container holds them.
	pause=$(ctrd_task_pid "$POD_ID")
	[ "$(jq -r .stdout <<<"$ns1" | sed -n 1p)" = "$(readlink "/proc/$pause/ns/net")" ]
	[ "$(jq -r .stdout <<<"$ns1" | sed -n 2p)" = "$(readlink "/proc/$pause/ns/ipc")" ]
	out=$(exec_sync "$c1" sh -c 'for i in $(seq 50); do echo hello-from-one | nc 127.0.0.1 8080 && exit 0; sleep 0.1; done; exit 1')
	[ "$(jq .exit_code <<<"$out")" -eq 0 ] || fail "nc 127.0.0.1 8080: $out"
	# What the server read went to its log, in the CRI log format.
	log=$(container_request ContainerStatus "$c2" | jq -r .status.log_path)
	for _ in $(seq 1 100); do
		grep -q ' stdout F hello-from-one$' "$log" && break
		sleep 0.1
	done
	grep -q ' stdout F hello-from-one$' "$log" || fail "server log: $(cat "$log")"
}

@test "cri: ContainerStats: memory in use (rss, page faults, the working set), CPU time, the writable layer" {
	run_pod pod4
	cid=$(run_container busy sh -c 'x=$(seq 1 20000); sleep 1000')
	sleep 0.5
	out=$(container_request ContainerStats "$cid")
	jq -e --arg i "$cid" '.stats.attributes.id == $i and .stats.attributes.metadata.name == "busy"
		and (.stats.memory.working_set_bytes.value | tonumber) > 0
		and (.stats.memory.usage_bytes.value | tonumber) > 0
		and (.stats.memory.rss_bytes.value | tonumber) > 0
		and (.stats.memory.page_faults.value | tonumber) > 0
		and (.stats.memory.working_set_bytes.value | tonumber)
			<= (.stats.memory.usage_bytes.value | tonumber)
		and (.stats.cpu.usage_core_nano_seconds.value | tonumber) > 0
		and (.stats.writable_layer.fs_id.mountpoint | length) > 0' <<<"$out" >/dev/null ||
		fail "ContainerStats: $out"
	run cri ListContainerStats "$(jq -cn --arg p "$POD_ID" '{filter: {pod_sandbox_id: $p}}')"
	[ "$(jq -r '[.stats[].attributes.id] | join(",")' <<<"$output")" = "$cid" ]
}

@test "cri: UpdateContainerResources: the memory limit and CPU quota land in the container's cgroup" {
	run_pod pod5
	cid=$(run_container limited sleep 1000)
	pid=$(container_info_pid "$cid")
	[ -n "$pid" ] || fail "no pid in the verbose ContainerStatus"
	[ "$pid" != null ]
	in_pod_cgroup "$pid"
	[ "$(pid_memory_limit "$pid")" = max ]
	container_request UpdateContainerResources "$cid" \
		'{"linux": {"memory_limit_in_bytes": 67108864, "cpu_period": 100000, "cpu_quota": 50000}}' >/dev/null
	[ "$(pid_memory_limit "$pid")" = 67108864 ]
	[ "$(pid_cpu_max "$pid")" = "50000 100000" ]
	out=$(container_request ContainerStatus "$cid")
	[ "$(jq -r .status.resources.linux.memory_limit_in_bytes <<<"$out")" = 67108864 ] || fail "ContainerStatus: $out"
	# Lowered again while it runs.
	container_request UpdateContainerResources "$cid" '{"linux": {"memory_limit_in_bytes": 33554432}}' >/dev/null
	[ "$(pid_memory_limit "$pid")" = 33554432 ]
	[ "$(container_state "$cid")" = CONTAINER_RUNNING ]
}

# pod_memory_limit BYTES: the memory limit of the pod's cgroup, written as
# the kubelet writes a pod's (on v1, in the memory hierarchy).
pod_memory_limit() {
	if cgroup_is_v1; then
		echo "$1" >"/sys/fs/cgroup/memory$POD_CGROUP/memory.limit_in_bytes"
	else
		echo "$1" >"/sys/fs/cgroup$POD_CGROUP/memory.max"
	fi
}

@test "cri: limits hold: over its own memory limit a container is OOMKilled, and over its pod's" {
	run_pod oompod
	# 100 MB into one shell variable, in 32 MiB.
	hog='x=$(head -c 100000000 /dev/zero | tr "\\0" x); echo survived'
	cid=$(CONTAINER_EXTRA='{"linux": {"resources": {"memory_limit_in_bytes": 33554432}}}' run_container own sh -c "$hog")
	wait_for_container_state "$cid" CONTAINER_EXITED
	out=$(container_request ContainerStatus "$cid")
	jq -e '.status.reason == "OOMKilled" and .status.exit_code == 137' <<<"$out" >/dev/null ||
		fail "over its own limit: $out"
	# The pod's cgroup bounds a container that sets no limit of its own.
	pod_memory_limit 50331648
	cid=$(run_container unbounded sh -c "$hog")
	wait_for_container_state "$cid" CONTAINER_EXITED
	out=$(container_request ContainerStatus "$cid")
	jq -e '.status.reason == "OOMKilled" and .status.exit_code == 137' <<<"$out" >/dev/null ||
		fail "over the pod's limit: $out"
}

@test "cri: StopContainer with a timeout: SIGTERM handled, exit 0, EXITED; ignored, SIGKILL at the timeout" {
	run_pod pod6
	graceful=$(run_container graceful sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done')
	stubborn=$(run_container stubborn sh -c 'trap "" TERM; while :; do sleep 0.1; done')
	sleep 0.3
	start=$(date +%s%N)
	container_request StopContainer "$graceful" '{"timeout": 30}' >/dev/null
	took=$((($(date +%s%N) - start) / 1000000))
	[ "$took" -lt 10000 ] || fail "StopContainer of a container that exits on SIGTERM took $took ms"
	out=$(container_request ContainerStatus "$graceful")
	jq -e '.status.state == "CONTAINER_EXITED" and .status.exit_code == 0 and .status.reason == "Completed"
		and (.status.finished_at | tonumber) >= (.status.started_at | tonumber)' <<<"$out" >/dev/null ||
		fail "ContainerStatus after StopContainer: $out"
	start=$(date +%s%N)
	container_request StopContainer "$stubborn" '{"timeout": 2}' >/dev/null
	took=$((($(date +%s%N) - start) / 1000000))
	[ "$took" -ge 1900 ] && [ "$took" -lt 15000 ] || fail "StopContainer with timeout 2 took $took ms"
	out=$(container_request ContainerStatus "$stubborn")
	jq -e '.status.state == "CONTAINER_EXITED" and .status.exit_code == 137 and .status.reason == "Error"' \
		<<<"$out" >/dev/null || fail "ContainerStatus after SIGKILL: $out"
	# Exited containers are removed; the pod stays.
	container_request RemoveContainer "$graceful" >/dev/null
	run --separate-stderr container_request ContainerStatus "$graceful"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *NOT_FOUND* ]]
	[ "$(jq -r .status.state <<<"$(pod_request PodSandboxStatus)")" = SANDBOX_READY ]
}

@test "cri: StopPodSandbox, RemovePodSandbox: no shim, no mount, no cgroup, no network namespace left" {
	run_pod pod7
	c1=$(run_container a sleep 1000)
	c2=$(run_container b sleep 1000)
	pids="$(ctrd_task_pid "$POD_ID") $(container_info_pid "$c1") $(container_info_pid "$c2")"
	# containerd's verbose status has the pod's spec, and in it the
	# network namespace it pinned (/var/run/netns/cni-...).
	netns=$(cri PodSandboxStatus "$(jq -cn --arg i "$POD_ID" '{pod_sandbox_id: $i, verbose: true}')" |
		jq -r '.info.info | fromjson | .runtimeSpec.linux.namespaces[] | select(.type == "network") | .path')
	[ -n "$netns" ] && netns=$(readlink -f "$netns") && grep -qF " $netns " /proc/self/mountinfo || fail "no network namespace mount: $netns"
	[ -n "$(pod_shims "$POD_ID")" ]
	[ -n "$(ctrd_mounts)" ]
	[ -n "$(pod_cgroup_children)" ]

	pod_request StopPodSandbox >/dev/null
	[ "$(jq -r .status.state <<<"$(pod_request PodSandboxStatus)")" = SANDBOX_NOTREADY ]
	[ "$(container_state "$c1")" = CONTAINER_EXITED ]
	[ "$(container_state "$c2")" = CONTAINER_EXITED ]
	pod_request RemovePodSandbox >/dev/null
	run cri ListPodSandbox
	[ "$(jq '.items | length' <<<"$output")" -eq 0 ] || fail "ListPodSandbox: $output"
	run cri ListContainers
	[ "$(jq '.containers | length' <<<"$output")" -eq 0 ] || fail "ListContainers: $output"
	run ctrd container ls -q
	[ -z "$output" ] || fail "containerd still has containers: $output"

	for _ in $(seq 1 50); do
		[ -z "$(pod_shims "$POD_ID")" ] && break
		sleep 0.1
	done
	[ -z "$(pod_shims "$POD_ID")" ] || fail "shims left: $(pod_shims "$POD_ID" | xargs ps -o pid,args -p)"
	for p in $pids; do
		run ! kill -0 "$p"
	done
	[ -z "$(ctrd_mounts)" ] || fail "mounts left: $(ctrd_mounts)"
	[ -z "$(pod_cgroup_children)" ] || fail "cgroups left: $(pod_cgroup_children)"
	run ! grep -qF " $netns " /proc/self/mountinfo
	[ ! -e "$netns" ]
	[ -z "$(ip -br link show master "$CRI_CNI_LINK" 2>/dev/null)" ] || fail "veths left: $(ip -br link show master "$CRI_CNI_LINK")"
}

@test "cri: the reference: the same pod and container lifecycle on runc (handler runc)" {
	pod_lifecycle runc
}

@test "cri: a pod and a container through their whole life on the handler under test" {
	pod_lifecycle "$CRI_HANDLER"
}

# sandboxed_pod_container: in the pod just run, a container under brig's
# sandbox profile. The CRI asks for uid 0 with the default capabilities;
# the profile decides: the sandbox's user, no capability, no_new_privs,
# seccomp, a read-only root with a writable /tmp, and the pod's user
# namespace. What is the pod's stays the pod's: its image (busybox, not
# the sandbox's Debian tree), CRI's mounts (hosts, hostname, resolv.conf,
# shm, a volume) and the pause container's network and IPC namespaces; the
# pause container is hardened too.
sandboxed_pod_container() {
	local cid out pause vol range
	# A volume as the kubelet makes one for a pod with fsGroup 2000: the
	# host's root owns it, the group is the pod's.
	vol=$CTRD_DIR/volumes/$POD_UID
	mkdir -p "$vol"
	echo s3cret >"$vol/token"
	chown 0:2000 "$vol" "$vol/token"
	chmod 2770 "$vol"
	chmod 0640 "$vol/token"
	cid=$(CONTAINER_EXTRA=$(jq -cn --arg v "$vol" '{mounts: [{container_path: "/vol", host_path: $v}],
		linux: {security_context: {supplemental_groups: [2000]}}}') run_container sb sleep 1000)
	[ "$(container_state "$cid")" = CONTAINER_RUNNING ]
	out=$(exec_sync "$cid" sh -c 'id -u; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status
		touch /probe 2>/dev/null && echo root-writable; touch /tmp/probe && echo tmp-writable
		readlink /proc/self/ns/net; readlink /proc/self/ns/ipc
		for m in /etc/hosts /etc/hostname /etc/resolv.conf /dev/shm /vol; do
			grep -q " $m " /proc/self/mountinfo && echo "mounted $m"
		done
		[ -e /usr/bin/python3 ] && echo debian-tree; [ -x /bin/busybox ] && echo own-image')
	[ "$(jq -r .stdout <<<"$out" | head -n 5 | tr -s '\t\n' '  ')" = "1000 CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 tmp-writable " ] ||
		fail "ExecSync: $out"
	pause=$(ctrd_task_pid "$POD_ID")
	[ "$(jq -r .stdout <<<"$out" | sed -n 6p)" = "$(readlink "/proc/$pause/ns/net")" ] ||
		fail "not in the pod's network namespace: $out"
	[ "$(jq -r .stdout <<<"$out" | sed -n 7p)" = "$(readlink "/proc/$pause/ns/ipc")" ] ||
		fail "not in the pod's IPC namespace: $out"
	[ "$(jq -r .stdout <<<"$out" | sed -n '8,$p' | tr -s '\n' ' ')" = "mounted /etc/hosts mounted /etc/hostname mounted /etc/resolv.conf mounted /dev/shm mounted /vol own-image " ] ||
		fail "the pod's image and mounts: $out"

	# One user namespace for the pod: the pause container's, mapping a
	# range of its own (not the host's ids), which every container joins.
	[ "$(readlink "/proc/$pause/ns/user")" != "$(readlink /proc/self/ns/user)" ] || fail "the pause container is in the host's user namespace"
	range=$(awk '$1 == 0 && $3 == 65536 { print $2 }' "/proc/$pause/uid_map")
	[ -n "$range" ] && [ "$range" -ge 65536 ] || fail "the pause's uid_map: $(cat "/proc/$pause/uid_map")"
	out=$(exec_sync "$cid" sh -c 'readlink /proc/self/ns/user; cat /proc/self/uid_map /proc/self/gid_map | tr -s " " " "
		stat -c "%u:%g" /bin/busybox /etc/hosts')
	[ "$(jq -r .stdout <<<"$out" | sed -n 1p)" = "$(readlink "/proc/$pause/ns/user")" ] ||
		fail "not in the pod's user namespace: $out"
	# the image's root and CRI's files are root's inside: id-mapped binds
	[ "$(jq -r .stdout <<<"$out" | sed -n '2,$p' | tr -s ' \n' '  ')" = " 0 $range 65536 0 $range 65536 0:0 0:0 " ] ||
		fail "the maps and owners inside: $out"
	# Both run as the sandbox's user, which the host sees in the range.
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/$pause/status")" = $((range + 1000)) ] || fail "pause runs as $(grep Uid "/proc/$pause/status")"
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/$(container_info_pid "$cid")/status")" = $((range + 1000)) ]
	[ "$(awk '/^CapEff:/ { print $2 }' "/proc/$pause/status")" = 0000000000000000 ]

	# The volume through the pod's group, as without a user namespace:
	# its files keep their owners on the host's disk.
	out=$(exec_sync "$cid" sh -c 'cat /vol/token && echo made >/vol/made && stat -c "%u:%g" /vol/token /vol')
	[ "$(jq -r .stdout <<<"$out" | tr -s '\n' ' ')" = "s3cret 0:2000 0:2000 " ] || fail "the volume inside: $out"
	[ "$(stat -c %u:%g "$vol/made")" = 1000:2000 ] || fail "a file made in the volume: $(stat -c %u:%g "$vol/made") on the host"

	# brig-init is the container's PID 1, the command its child: a zombie
	# is reaped, and SIGTERM reaches the command, which sleep as PID 1
	# would ignore until the SIGKILL at the timeout.
	out=$(exec_sync "$cid" sh -c 'tr "\0" " " </proc/1/cmdline; echo; sh -c "sleep 0.1 & exec true"; sleep 0.5
		grep -l "^State:.*Z" /proc/[0-9]*/status 2>/dev/null | wc -l')
	[ "$(jq -r .stdout <<<"$out" | tr -s '\n' '|')" = "/dev/.brig-init --config /dev/null -- sleep 1000 |0|" ] ||
		fail "PID 1 and zombies: $out"
	start=$(date +%s%N)
	container_request StopContainer "$cid" '{"timeout": 30}' >/dev/null
	took=$((($(date +%s%N) - start) / 1000000))
	out=$(container_request ContainerStatus "$cid")
	[ "$took" -lt 10000 ] && [ "$(jq .status.exit_code <<<"$out")" -eq 143 ] ||
		fail "StopContainer took $took ms: $out"
}

# sandbox_leftovers: the binds and roots of containers' private dirs still
# mounted, and the user namespace ranges those dirs hold.
sandbox_leftovers() {
	grep -c " /var/lib/brig/sandboxes/.containers/" /proc/self/mountinfo || true
	find /var/lib/brig/idranges -maxdepth 1 -type f -exec sed -n 2p {} + 2>/dev/null |
		grep -c "^/var/lib/brig/sandboxes/.containers/" || true
}

@test "cri: handler brig-sandbox: its options file (ConfigPath) reaches the shim, the sandbox profile applies" {
	[ "$CRI_HANDLER" != runc ] || skip "brig-specific: the sandbox profile"
	before=$(sandbox_leftovers)
	run_pod sbpod brig-sandbox
	sandboxed_pod_container
	[ "$(sandbox_leftovers)" != "$before" ] || fail "no bind and no range while the pod runs"
	pod_request StopPodSandbox >/dev/null
	pod_request RemovePodSandbox >/dev/null
	# The pod's range and every bind of its containers go with it.
	[ "$(sandbox_leftovers)" = "$before" ] || fail "left: $(grep " /var/lib/brig/sandboxes/.containers/" /proc/self/mountinfo)"
}

@test "cri: userns = \"host\" in the options file: a sandboxed pod with the host's ids, no id-mapped mount" {
	[ "$CRI_HANDLER" != runc ] || skip "brig-specific: the sandbox profile"
	before=$(sandbox_leftovers)
	run_pod hostids brig-sandbox-hostids
	cid=$(run_container sb sleep 1000)
	pause=$(ctrd_task_pid "$POD_ID")
	pid=$(container_info_pid "$cid")
	for p in "$pause" "$pid"; do
		[ "$(readlink "/proc/$p/ns/user")" = "$(readlink /proc/self/ns/user)" ] || fail "pid $p has a user namespace"
		[ "$(awk '/^Uid:/ { print $2 }' "/proc/$p/status")" = 1000 ] || fail "pid $p: $(grep Uid "/proc/$p/status")"
	done
	out=$(exec_sync "$cid" sh -c 'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; touch /probe 2>/dev/null && echo root-writable')
	[ "$(jq -r .stdout <<<"$out" | tr -s '\t\n' '  ')" = "CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " ] || fail "ExecSync: $out"
	[ "$(sandbox_leftovers)" = "$before" ] || fail "a private dir's mount or range for a pod without a user namespace"
}

@test "cri: handler brig, a pod annotated run.brig.profile=sandbox (pod_annotations): sandboxed the same way" {
	[ "$CRI_HANDLER" != runc ] || skip "brig-specific: the sandbox profile"
	POD_ANNOTATIONS='{"run.brig.profile": "sandbox"}' run_pod annpod brig
	sandboxed_pod_container
}
