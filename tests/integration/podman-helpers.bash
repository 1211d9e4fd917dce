#!/usr/bin/env bash
# shellcheck disable=SC2154 # bats' own variables
# podman driving brig: a private podman (its own storage, run and tmp
# directories, no registry) whose OCI runtime is the brig under test.
#
# podman needs a pure cgroup v2 host with the memory, pids and cpu
# controllers (brig is v2-only, and on a hybrid host podman builds a v1
# spec), so `make check` runs podman.bats in the test VM (tests/vm/).

# podman_unusable: why podman cannot run here, or nothing.
podman_unusable() {
	local c
	command -v podman >/dev/null 2>&1 || {
		echo "podman is not installed (apt-get install podman)"
		return
	}
	command -v conmon >/dev/null 2>&1 || [ -x /usr/libexec/podman/conmon ] || [ -x /usr/bin/conmon ] || {
		echo "conmon is not installed"
		return
	}
	if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
		echo "not a pure cgroup v2 host: run this file in the VM (tests/vm/run.sh)"
		return
	fi
	for c in memory pids cpu; do
		grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || {
			echo "no $c controller: run this file in the VM (tests/vm/run.sh)"
			return
		}
	done
}

# podman_setup_store DIR: the private podman's directories and its
# containers.conf, and the busybox image localhost/brigtest-busybox.
podman_setup_store() {
	local dir=$1 rootfs applet
	mkdir -p "$dir/tmp" "$dir/storage" "$dir/runroot"
	# The runtime is known by its base name: call it brig whatever the
	# binary under test is named, so that runtime_supports_json matches.
	ln -sf "$BRIG" "$dir/brig"
	# No network in the test machine; podman's own default seccomp profile
	# stays on, as for any user.
	cat >"$dir/containers.conf" <<-EOF
		[containers]
		netns = "none"
		log_driver = "k8s-file"

		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		runtime = "brig"
		runtime_supports_json = ["brig"]

		[engine.runtimes]
		brig = ["$dir/brig"]
	EOF

	rootfs=$dir/rootfs
	mkdir -p "$rootfs"/{bin,etc,proc,sys,dev,tmp,root,home/user}
	chmod 1777 "$rootfs/tmp"
	cp "$BUSYBOX" "$rootfs/bin/busybox"
	for applet in $("$BUSYBOX" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
	done
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'user:x:1000:1000:user:/home/user:/bin/sh' >"$rootfs/etc/passwd"
	printf '%s\n' 'root:x:0:' 'user:x:1000:' >"$rootfs/etc/group"
	chown 1000:1000 "$rootfs/home/user"
	tar -C "$rootfs" -cf "$dir/rootfs.tar" .
	podman_cmd import --change 'CMD ["/bin/sh"]' "$dir/rootfs.tar" "$PODMAN_IMAGE" >/dev/null
}

# podman_cmd ARGS...: the private podman. brig is its default runtime
# (containers.conf); the flags repeat what matters so that the command line
# alone says how podman was driven.
podman_cmd() {
	CONTAINERS_CONF=$PODMAN_DIR/containers.conf \
		timeout -k 5 "${PODMAN_TIMEOUT:-180}" podman \
		--root "$PODMAN_DIR/storage" --runroot "$PODMAN_DIR/runroot" \
		--tmpdir "$PODMAN_DIR/tmp" --storage-driver vfs \
		--runtime brig --cgroup-manager cgroupfs --events-backend file \
		"$@"
}

# wait_for_log NAME TEXT: until `podman logs NAME` has the line TEXT.
wait_for_log() {
	for _ in $(seq 60); do
		podman_cmd logs "$1" 2>/dev/null | tr -d '\r' | grep -qxF -- "$2" && return 0
		sleep 0.5
	done
	fail "'$2' did not appear in the logs of $1: $(podman_cmd logs "$1" 2>&1)"
}

# full_id NAME: the container's id, which is also its id for brig.
full_id() {
	podman_cmd inspect --format '{{.Id}}' "$1"
}
