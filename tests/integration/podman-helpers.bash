#!/usr/bin/env bash
# shellcheck disable=SC2154 # bats' own variables
# podman driving brig: a private podman (its own storage, run and tmp
# directories, no registry, the cgroupfs manager) whose OCI runtime is the
# brig under test, for podman.bats and podman_checkpoint.bats, with their
# bats hooks. The image is localhost/brigtest-busybox (PODMAN_IMAGE).

PODMAN_IMAGE=localhost/brigtest-busybox:latest

# podman_unusable: why podman cannot run here, or nothing.
podman_unusable() {
	command -v podman >/dev/null 2>&1 || {
		echo "podman is not installed (apt-get install podman)"
		return
	}
	command -v conmon >/dev/null 2>&1 || [ -x /usr/libexec/podman/conmon ] || [ -x /usr/bin/conmon ] || {
		echo "conmon is not installed"
		return
	}
}

# podman_ulimits_line: for a runner without CAP_SYS_RESOURCE (as in some
# CI containers), a containers.conf line with modest open files and
# process limits. podman's defaults for root (1048576 each) are above the
# hard limits conmon passes down, the container's setrlimit could not
# raise them, and every run would fail with EPERM before the test got to
# what it checks.
podman_ulimits_line() {
	local eff
	eff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
	# CAP_SYS_RESOURCE is capability 24.
	[ $(((0x$eff >> 24) & 1)) -eq 1 ] ||
		echo 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]'
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
		$(podman_ulimits_line)

		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		runtime = "brig"
		runtime_supports_json = ["brig"]

		[engine.runtimes]
		brig = ["$dir/brig"]
	EOF

	rootfs=$dir/rootfs
	image_rootfs "$rootfs"
	tar -C "$rootfs" -cf "$dir/rootfs.tar" .
	podman_cmd import --change 'CMD ["/bin/sh"]' "$dir/rootfs.tar" "$PODMAN_IMAGE" >/dev/null
}

# The hooks of both files: the store in $BATS_FILE_TMPDIR, or PODMAN_SKIP
# saying why podman can't run here (each test then skips); every container
# removed at the end. The tests use podman's bundles, not helpers.bash's.
setup_file() {
	local why
	why=$(podman_unusable)
	if [ -n "$why" ]; then
		export PODMAN_SKIP=$why
		return 0
	fi
	export PODMAN_DIR=$BATS_FILE_TMPDIR/podman
	podman_setup_store "$PODMAN_DIR"
}

teardown_file() {
	[ -z "${PODMAN_SKIP:-}" ] || return 0
	podman_cmd rm --all --force --time 0 >/dev/null 2>&1 || true
}

setup() {
	[ -z "${PODMAN_SKIP:-}" ] || skip "$PODMAN_SKIP"
}

teardown() {
	:
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
