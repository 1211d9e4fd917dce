#!/usr/bin/env bash
# A private containerd for the shim's tests and benchmarks: its own socket,
# root and state directory on a tmpfs, no CRI plugin, and
# containerd-shim-brig-v2 (from SHIM_DIR) found through PATH. Plus a busybox
# image written as an OCI layout and imported with `ctr image import`: no
# registry, no network.
#
# Sourced by tests/integration/shim.bats and tests/bench/shim*.sh (bash).

CTRD_NS=brigtest
CTRD_IMAGE=localhost/brigtest-busybox:latest
BUSYBOX=${BUSYBOX:-/bin/busybox}

# ctrd ARG...: ctr against the private containerd, bounded in time so a
# hung shim fails one command instead of stalling the suite.
ctrd() {
	timeout "${CTRD_TIMEOUT:-120}" ctr --address "$CTRD_DIR/containerd.sock" --namespace "$CTRD_NS" "$@"
}

# containerd_start DIR [PLUGINS_TOML]: starts containerd with everything
# under DIR (which must be on a tmpfs or ext4: its overlay snapshots can't
# live on overlayfs or 9p), and waits until it answers. Its log is
# DIR/containerd.log. Without PLUGINS_TOML the CRI plugin is disabled; with
# it (a file of [plugins."..."] tables, cri-helpers.bash) the CRI plugin
# runs, configured by the file.
containerd_start() {
	CTRD_DIR=$1
	local plugins=${2:-} disabled='disabled_plugins = ["io.containerd.grpc.v1.cri"]'
	[ -z "$plugins" ] || disabled=""
	mkdir -p "$CTRD_DIR/root" "$CTRD_DIR/state"
	cat >"$CTRD_DIR/config.toml" <<-EOF
		version = 2
		root = "$CTRD_DIR/root"
		state = "$CTRD_DIR/state"
		$disabled
		[grpc]
		  address = "$CTRD_DIR/containerd.sock"
		[ttrpc]
		  address = "$CTRD_DIR/containerd.sock.ttrpc"
		[debug]
		  level = "debug"
	EOF
	[ -z "$plugins" ] || cat "$plugins" >>"$CTRD_DIR/config.toml"
	# The shim is looked up on PATH, as containerd does for any runtime.
	# A sandboxed task's packages proxy is this containerd's own, stopped
	# with it (containerd_stop).
	PATH="$SHIM_DIR:$PATH" BRIG_EGRESS_DIR="$CTRD_DIR/egress" BRIG_EGRESS_LOG="$CTRD_DIR/egress.log" \
		setsid containerd --config "$CTRD_DIR/config.toml" \
		>>"$CTRD_DIR/containerd.log" 2>&1 </dev/null &
	CTRD_PID=$!
	echo "$CTRD_PID" >"$CTRD_DIR/containerd.pid"
	local i
	for _ in $(seq 1 600); do
		ctrd version >/dev/null 2>&1 && return 0
		kill -0 "$CTRD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "containerd did not start; its log:" >&2
	tail -n 30 "$CTRD_DIR/containerd.log" >&2
	return 1
}

# containerd_kill: SIGKILL to containerd alone (its shims keep running).
containerd_kill() {
	local pid
	pid=$(cat "$CTRD_DIR/containerd.pid")
	kill -KILL "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# ctrd_remove_all: every task killed and deleted, every container removed.
ctrd_remove_all() {
	local t c
	for t in $(ctrd task ls -q 2>/dev/null); do
		ctrd task kill -s KILL "$t" >/dev/null 2>&1
		ctrd task delete --force "$t" >/dev/null 2>&1
	done
	for c in $(ctrd container ls -q 2>/dev/null); do
		ctrd container rm "$c" >/dev/null 2>&1
	done
}

# containerd_stop: every task killed and removed, containerd stopped, and
# the shims that served them gone.
containerd_stop() {
	[ -n "${CTRD_DIR:-}" ] && [ -f "$CTRD_DIR/containerd.pid" ] || return 0
	ctrd_remove_all
	local pid
	pid=$(cat "$CTRD_DIR/containerd.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	BRIG_EGRESS_LOG=$CTRD_DIR/egress.log stop_file_proxies
	# Snapshots are overlay mounts under the root: unmount before removal.
	grep -o " $CTRD_DIR/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
	rm -f "$CTRD_DIR/containerd.pid"
}

# sha256_of FILE: the hex digest.
sha256_of() {
	sha256sum "$1" | cut -d' ' -f1
}

# oci_busybox_image TARBALL [NAME [CMD_JSON]]: a busybox image as an OCI
# layout tarball: one uncompressed layer, an image config and a manifest,
# named NAME (default $CTRD_IMAGE), whose command is CMD_JSON (default
# ["sh"]).
oci_busybox_image() {
	local out=$1 name=${2:-$CTRD_IMAGE} cmd=${3:-'["sh"]'} work arch layer config manifest
	work=$(mktemp -d "${TMPDIR:-/tmp}/oci.XXXXXX")
	mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/sys" "$work/rootfs/dev" \
		"$work/rootfs/tmp" "$work/rootfs/etc" "$work/layout/blobs/sha256"
	busybox_applets "$work/rootfs/bin"
	echo "root:x:0:0:root:/root:/bin/sh" >"$work/rootfs/etc/passwd"
	echo "root:x:0:" >"$work/rootfs/etc/group"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		-C "$work/rootfs" -cf "$work/layer.tar" .
	layer=$(sha256_of "$work/layer.tar")
	mv "$work/layer.tar" "$work/layout/blobs/sha256/$layer"
	arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	jq -cn --arg arch "$arch" --arg diff "sha256:$layer" --argjson cmd "$cmd" '{
		architecture: $arch, os: "linux",
		config: { Env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], Cmd: $cmd, WorkingDir: "/" },
		rootfs: { type: "layers", diff_ids: [$diff] } }' >"$work/config.json"
	config=$(sha256_of "$work/config.json")
	jq -cn --arg c "sha256:$config" --argjson cs "$(stat -c %s "$work/config.json")" \
		--arg l "sha256:$layer" --argjson ls "$(stat -c %s "$work/layout/blobs/sha256/$layer")" '{
		schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs },
		layers: [ { mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls } ] }' \
		>"$work/manifest.json"
	manifest=$(sha256_of "$work/manifest.json")
	mv "$work/config.json" "$work/layout/blobs/sha256/$config"
	jq -cn --arg m "sha256:$manifest" --argjson ms "$(stat -c %s "$work/manifest.json")" \
		--arg arch "$arch" --arg name "$name" '{
		schemaVersion: 2,
		manifests: [ { mediaType: "application/vnd.oci.image.manifest.v1+json",
			digest: $m, size: $ms, platform: { architecture: $arch, os: "linux" },
			annotations: { "io.containerd.image.name": $name,
				"org.opencontainers.image.ref.name": "latest" } } ] }' >"$work/layout/index.json"
	mv "$work/manifest.json" "$work/layout/blobs/sha256/$manifest"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
	tar -C "$work/layout" -cf "$out" .
	rm -rf "$work"
}

# containerd_import_busybox: the image into the private containerd.
containerd_import_busybox() {
	oci_busybox_image "$CTRD_DIR/busybox-oci.tar" &&
		ctrd image import "$CTRD_DIR/busybox-oci.tar" >/dev/null &&
		ctrd image ls -q | grep -qx "$CTRD_IMAGE"
}

# wait_for_status TASK STATUS [TRIES]: polls `ctr task ls` (0.1 s apart).
wait_for_status() {
	local task=$1 want=$2 tries=${3:-300} got
	while [ "$tries" -gt 0 ]; do
		got=$(ctrd task ls 2>/dev/null | awk -v t="$task" '$1 == t { print $3 }')
		[ "$got" = "$want" ] && return 0
		tries=$((tries - 1))
		sleep 0.1
	done
	echo "task $task: status '$got', expected $want" >&2
	return 1
}
