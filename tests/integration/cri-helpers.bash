#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2034,SC2154 # jq programs; variables containerd-helpers.bash and the tests read; bats' own
# A private containerd with its CRI plugin, driven as a kubelet drives it:
# the runtime.v1 gRPC API through tests/tools/cri/cri.py, pods run with a
# RuntimeClass handler. On top of containerd-helpers.bash (its own socket,
# root and state under /run, the shim found through SHIM_DIR on PATH):
#
#   - images imported into the CRI namespace k8s.io: the busybox image
#     ($CTRD_IMAGE) and $CRI_PAUSE_IMAGE, the same busybox whose command is
#     `sleep infinity`, as the sandbox ("pause") image. No registry.
#   - CNI: the host's plugins (/usr/lib/cni, containernetworking-plugins)
#     with a private configuration directory: a veth eth0 on a bridge of
#     the file's own (cri_cni_conflist).
#   - runtimes (RuntimeClass handlers): runc (io.containerd.runc.v2, the
#     default), brig (io.containerd.brig.v2) and brig-sandbox (the same
#     with options: a copy of contrib/containerd/shim-sandbox.toml, less
#     its SystemdCgroup line).
#   - cgroups through cgroupfs (no systemd): pods get a cgroup parent as
#     the kubelet's cgroupfs driver makes it, /kubepods/besteffort/pod<uid>.
#
# CRI_HANDLER is the handler under test: brig, or runc when BRIG names runc
# (the suite's reference run), or whatever the caller sets.
#
# Sourced, after helpers.bash and containerd-helpers.bash, by cri.bats.

CTRD_NS=k8s.io
CRI_PAUSE_IMAGE=localhost/brigtest-pause:latest
CRI_PY=${CRI_PY:-$BATS_TEST_DIRNAME/../tools/cri/cri.py}
CRI_CNI_BIN=${CRI_CNI_BIN:-/usr/lib/cni}
# The top of every pod cgroup parent (/kubepods/besteffort/pod<uid>).
CRI_CGROUP_TOP=/kubepods
if [ -z "${CRI_HANDLER:-}" ]; then
	if is_runc; then CRI_HANDLER=runc; else CRI_HANDLER=brig; fi
fi

# cri METHOD [JSON]: one CRI call to the private containerd; the response
# as JSON on stdout, or "cri.py: METHOD: CODE: details" on stderr and
# status 1.
cri() {
	timeout -k 5 "${CRI_TIMEOUT:-90}" "$CRI_PY" --endpoint "unix://$CTRD_DIR/containerd.sock" \
		--timeout "${CRI_CALL_TIMEOUT:-60}" "$@"
}

# cri_plugins_toml FILE: the CRI plugin's configuration (containerd 1.6,
# config version 2), with its CNI configuration and the options file of
# brig-sandbox written beside it.
cri_plugins_toml() {
	local out=$1 sect='plugins."io.containerd.grpc.v1.cri"'
	mkdir -p "$CTRD_DIR/cni/net.d" "$CTRD_DIR/cni/ipam" "$CTRD_DIR/pods"
	cri_cni_conflist >"$CTRD_DIR/cni/net.d/10-brigtest.conflist"
	# Without systemd, the sandbox profile with cgroupfs; with it
	# (CRI_SYSTEMD=1), every runtime's cgroups through systemd, as kubeadm
	# sets a node up.
	local sd=false
	[ "${CRI_SYSTEMD:-0}" = 1 ] && sd=true
	grep -v '^[[:space:]]*SystemdCgroup' "$BATS_TEST_DIRNAME/../../contrib/containerd/shim-sandbox.toml" \
		>"$CTRD_DIR/shim-sandbox.toml"
	echo "SystemdCgroup = $sd" >>"$CTRD_DIR/shim-sandbox.toml"
	{ cat "$CTRD_DIR/shim-sandbox.toml"; echo 'userns = "host"'; } >"$CTRD_DIR/shim-sandbox-hostids.toml"
	echo "SystemdCgroup = $sd" >"$CTRD_DIR/shim.toml"
	cat >"$out" <<-EOF
		[$sect]
		  sandbox_image = "$CRI_PAUSE_IMAGE"
		  disable_cgroup = false
		  systemd_cgroup = false
		  disable_apparmor = true
		  # containerd gives the pause container oom_score_adj -998, which
		  # needs CAP_SYS_RESOURCE: clamp it to containerd's own.
		  restrict_oom_score_adj = true
		  enable_selinux = false
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  [$sect.containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [$sect.containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [$sect.containerd.runtimes.runc.options]
		        SystemdCgroup = $sd
		    [$sect.containerd.runtimes.brig]
		      runtime_type = "io.containerd.brig.v2"
		      # As contrib/containerd/config-1.x.toml: a pod annotated
		      # run.brig.profile=sandbox is sandboxed on this class too.
		      pod_annotations = ["run.brig.profile"]
		      container_annotations = ["run.brig.profile"]
		      [$sect.containerd.runtimes.brig.options]
		        TypeUrl = "io.containerd.brig.v1.Options"
		        ConfigPath = "$CTRD_DIR/shim.toml"
		    [$sect.containerd.runtimes.brig-sandbox]
		      runtime_type = "io.containerd.brig.v2"
		      [$sect.containerd.runtimes.brig-sandbox.options]
		        TypeUrl = "io.containerd.brig.v1.Options"
		        ConfigPath = "$CTRD_DIR/shim-sandbox.toml"
		    [$sect.containerd.runtimes.brig-sandbox-hostids]
		      runtime_type = "io.containerd.brig.v2"
		      [$sect.containerd.runtimes.brig-sandbox-hostids.options]
		        TypeUrl = "io.containerd.brig.v1.Options"
		        ConfigPath = "$CTRD_DIR/shim-sandbox-hostids.toml"
		  [$sect.cni]
		    bin_dir = "$CRI_CNI_BIN"
		    conf_dir = "$CTRD_DIR/cni/net.d"
		    max_conf_num = 1
	EOF
}

# cri_cni_conflist: the pods' network. containerd 1.6 runs the loopback
# plugin itself, and refuses a pod whose first network gives its eth0 no
# address ("failed to find network info for sandbox"): a loopback-only
# list won't do. Each pod gets a veth eth0 on $CRI_CNI_LINK, a bridge of
# its own (this host's kernel has no dummy or macvlan links) with an
# address of a private range (host-local, its leases under $CTRD_DIR).
# Not a gateway, no masquerade: the bridge has no address, and the host's
# routes, forwarding and iptables stay as they are.
cri_cni_conflist() {
	jq -n --arg link "$CRI_CNI_LINK" --arg leases "$CTRD_DIR/cni/ipam" '{
		cniVersion: "0.4.0", name: "brigtest",
		plugins: [ { type: "bridge", bridge: $link, isGateway: false, ipMasq: false,
			ipam: { type: "host-local", dataDir: $leases,
				ranges: [ [ { subnet: "10.213.0.0/24" } ] ] } } ] }'
}

# cri_cni_link_del: the pods' bridge (CRI_CNI_LINK, named after $CTRD_DIR;
# the bridge plugin makes it for the first pod and leaves it).
cri_cni_link_del() {
	[ -n "${CRI_CNI_LINK:-}" ] || return 0
	ip link del "$CRI_CNI_LINK" 2>/dev/null
	return 0
}

# cri_start: containerd with the CRI plugin under a new directory in /run
# ($CTRD_DIR), the images imported, and the CRI plugin ready: its runtime
# and its network.
cri_start() {
	SHIM_DIR=${SHIM_DIR:-$(dirname "$BRIG")}
	export SHIM_DIR
	command -v containerd >/dev/null || fail "containerd is not installed (scripts/install-deps.sh)" || return
	/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null ||
		fail "python3-grpcio or python3-protobuf is missing (scripts/install-deps.sh)" || return
	command -v protoc >/dev/null || fail "protoc is missing (apt-get install protobuf-compiler)" || return
	[ -x "$CRI_CNI_BIN/loopback" ] || fail "no CNI plugins in $CRI_CNI_BIN (apt-get install containernetworking-plugins)" || return
	CTRD_DIR=$(mktemp -d /run/brig-critest.XXXXXX)
	export CTRD_DIR
	# Names of this run's own: its bridge, and a tag in its pods' uids.
	CRI_CNI_LINK=brigcri${CTRD_DIR##*.}
	CRI_POD_TAG=brigtest${CTRD_DIR##*.}
	export CRI_CNI_LINK CRI_POD_TAG
	cri_plugins_toml "$CTRD_DIR/cri.toml"
	containerd_start "$CTRD_DIR" "$CTRD_DIR/cri.toml" || return
	oci_busybox_image "$CTRD_DIR/busybox-oci.tar" &&
		oci_busybox_image "$CTRD_DIR/pause-oci.tar" "$CRI_PAUSE_IMAGE" '["sleep","infinity"]' &&
		ctrd image import "$CTRD_DIR/busybox-oci.tar" >/dev/null &&
		ctrd image import "$CTRD_DIR/pause-oci.tar" >/dev/null ||
		fail "ctr image import failed" || return
	cri_wait_ready
}

# cri_wait_ready: until the CRI plugin reports RuntimeReady and NetworkReady
# and lists both images (~30 s).
cri_wait_ready() {
	local out=""
	for _ in $(seq 1 300); do
		out=$(cri Status 2>&1) &&
			jq -e '[.status.conditions[] | select(.status)] | length >= 2' <<<"$out" >/dev/null &&
			cri ImageStatus "$(jq -cn --arg i "$CRI_PAUSE_IMAGE" '{image: {image: $i}}')" |
			jq -e '.image.id != ""' >/dev/null &&
			return 0
		sleep 0.1
	done
	fail "the CRI plugin is not ready: $out; containerd's log: $(tail -n 20 "$CTRD_DIR/containerd.log")"
}

# cri_stop: every pod stopped and removed through the CRI, containerd
# stopped, the pod cgroups and the directory removed.
cri_stop() {
	[ -n "${CTRD_DIR:-}" ] || return 0
	cri_remove_all_pods
	containerd_stop
	cri_remove_pod_cgroups
	cri_cni_link_del
	rm -rf "$CTRD_DIR"
}

# cri_remove_all_pods: what a test leaves, as the kubelet would remove it.
cri_remove_all_pods() {
	local id
	for id in $(cri ListPodSandbox 2>/dev/null | jq -r '.items[].id'); do
		cri StopPodSandbox "$(jq -cn --arg i "$id" '{pod_sandbox_id: $i}')" >/dev/null
		cri RemovePodSandbox "$(jq -cn --arg i "$id" '{pod_sandbox_id: $i}')" >/dev/null
	done
}

# cri_remove_pod_cgroups: the pod cgroups this file's pods left (a
# kubelet removes its pod cgroups itself), deepest first, in every
# hierarchy; those of another run (another $CRI_POD_TAG) stay.
cri_remove_pod_cgroups() {
	local d
	[ -n "${CRI_POD_TAG:-}" ] || return 0
	for d in /sys/fs/cgroup/*"$CRI_CGROUP_TOP" /sys/fs/cgroup"$CRI_CGROUP_TOP"; do
		[ -d "$d" ] || continue
		find "$d" -depth -mindepth 1 -type d -path "*/pod*-$CRI_POD_TAG-*" -exec rmdir {} + 2>/dev/null
		rmdir "$d/besteffort" "$d" 2>/dev/null
	done
	return 0
}

# ------------------------------------------------------------------ pods ----

# pod_config NAME: POD_CONFIG, the PodSandboxConfig of a new pod, with a
# new uid (POD_UID) and its cgroup parent as the kubelet's cgroupfs driver
# names it (POD_CGROUP); its annotations are POD_ANNOTATIONS (a JSON
# object, default none).
pod_config() {
	local annotations=${POD_ANNOTATIONS:-}
	[ -n "$annotations" ] || annotations='{}'
	POD_UID=$(cat /proc/sys/kernel/random/uuid)-$CRI_POD_TAG-$BATS_SUITE_TEST_NUMBER
	POD_CGROUP=$CRI_CGROUP_TOP/besteffort/pod$POD_UID
	local parent=$POD_CGROUP
	if [ "${CRI_SYSTEMD:-0}" = 1 ]; then
		# the kubelet's systemd driver: a slice, the uid's dashes as _
		parent=kubepods-besteffort-pod${POD_UID//-/_}.slice
		POD_CGROUP=/kubepods.slice/kubepods-besteffort.slice/$parent
	fi
	mkdir -p "$CTRD_DIR/pods/$POD_UID"
	POD_CONFIG=$(jq -cn --arg name "$1" --arg uid "$POD_UID" --arg cg "$parent" \
		--arg logs "$CTRD_DIR/pods/$POD_UID" --argjson ann "$annotations" '{
		metadata: { name: $name, uid: $uid, namespace: "brigtest", attempt: 0 },
		hostname: $name,
		log_directory: $logs,
		labels: { "io.kubernetes.pod.name": $name, "io.kubernetes.pod.uid": $uid },
		annotations: $ann,
		linux: {
			cgroup_parent: $cg,
			security_context: { namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" } }
		} }')
}

# run_pod NAME [HANDLER]: RunPodSandbox with HANDLER (default $CRI_HANDLER);
# sets POD_ID, POD_CONFIG, POD_UID, POD_CGROUP.
run_pod() {
	local out
	pod_config "$1" || return
	out=$(cri RunPodSandbox "$(jq -cn --argjson c "$POD_CONFIG" --arg h "${2:-$CRI_HANDLER}" \
		'{config: $c, runtime_handler: $h}')") || return
	POD_ID=$(jq -r .pod_sandbox_id <<<"$out")
	[ -n "$POD_ID" ] || fail "RunPodSandbox: no id in $out"
}

# pod_request METHOD [POD]: a call that takes only the pod's id.
pod_request() {
	cri "$1" "$(jq -cn --arg i "${2:-$POD_ID}" '{pod_sandbox_id: $i}')"
}

# container_config NAME ARG...: the ContainerConfig of a busybox container
# running ARG... (as `args`, the image's cmd replaced), merged with
# CONTAINER_EXTRA (a JSON object: mounts, security_context..., default
# none).
container_config() {
	local name=$1 extra=${CONTAINER_EXTRA:-}
	shift
	[ -n "$extra" ] || extra='{}'
	jq -cn --arg name "$name" --arg image "$CTRD_IMAGE" --argjson args "$(json_array "$@")" \
		--argjson x "$extra" '{
		metadata: { name: $name, attempt: 0 },
		image: { image: $image },
		args: $args,
		log_path: ($name + ".log"),
		linux: { security_context: { namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" } } } } * $x'
}

# create_container NAME ARG...: CreateContainer in $POD_ID; prints the id.
create_container() {
	local out
	out=$(cri CreateContainer "$(jq -cn --arg p "$POD_ID" --argjson c "$(container_config "$@")" \
		--argjson s "$POD_CONFIG" '{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')") || return
	jq -r .container_id <<<"$out"
}

# container_request METHOD CID [JSON_FIELDS]: a call on a container, its
# request {container_id: CID} plus JSON_FIELDS.
container_request() {
	local extra=${3:-}
	[ -n "$extra" ] || extra='{}'
	cri "$1" "$(jq -cn --arg i "$2" --argjson x "$extra" '{container_id: $i} + $x')"
}

# run_container NAME ARG...: created and started; prints the id.
run_container() {
	local id
	id=$(create_container "$@") || return
	container_request StartContainer "$id" >/dev/null || return
	echo "$id"
}

# container_state CID: CONTAINER_RUNNING, CONTAINER_EXITED...
container_state() {
	container_request ContainerStatus "$1" | jq -r .status.state
}

# wait_for_container_state CID STATE: polls ContainerStatus (~30 s).
wait_for_container_state() {
	local got=""
	for _ in $(seq 1 300); do
		got=$(container_state "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.1
	done
	fail "container $1: state $got, expected $2"
}

# container_info_pid CID: the pid of the container's process, from the
# verbose ContainerStatus (containerd puts a JSON document under "info").
container_info_pid() {
	container_request ContainerStatus "$1" '{"verbose": true}' | jq -r '.info.info | fromjson | .pid'
}

# exec_sync CID ARG...: ExecSync (10 s timeout); prints the response with
# stdout and stderr decoded: {"stdout": "...", "stderr": "...", "exit_code": N}.
exec_sync() {
	local id=$1
	shift
	container_request ExecSync "$id" "$(jq -cn --argjson c "$(json_array "$@")" '{cmd: $c, timeout: 10}')" |
		jq -c '{stdout: (.stdout | @base64d), stderr: (.stderr | @base64d), exit_code}'
}

# ------------------------------------------------------------- leftovers ----

# pod_shims POD: the pids of the shims serving the pod, brig's or runc's
# (containerd starts a pod's shim for its sandbox container: -id POD).
pod_shims() {
	pgrep -f "containerd-shim-.* -id $1( |$)" || true
}

# ctrd_mounts: the mounts under the private containerd's directories.
ctrd_mounts() {
	grep -F " $CTRD_DIR/" /proc/self/mountinfo || true
}

# pod_cgroup_children: the cgroups left under the pod's cgroup parent, in
# every hierarchy.
pod_cgroup_children() {
	local d
	for d in /sys/fs/cgroup/*"$POD_CGROUP" /sys/fs/cgroup"$POD_CGROUP"; do
		[ -d "$d" ] && find "$d" -mindepth 1 -type d
	done
	return 0
}
