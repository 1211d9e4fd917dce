#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2154 # variables docker.bats reads; bats' own
# Docker driving brig: a private dockerd for docker.bats, with the brig
# under test registered as its runtime "brig" (--add-runtime brig=$BRIG;
# with BRIG=/usr/sbin/runc the same name runs runc, the reference run).
# Everything is the file's own, under one directory ($DOCKER_DIR, on /var/tmp:
# overlay2's layers can't live on overlayfs, and /tmp may be one):
#
#   $DOCKER_DIR/docker.sock   the API socket (-H), for $DOCKER_CLI
#   $DOCKER_DIR/data          --data-root: images, layers, containerd's root
#   $DOCKER_DIR/exec          --exec-root: the containerd dockerd starts
#                             (exec/containerd/containerd.sock), its bundles
#                             and the runtime's state root
#   $DOCKER_DIR/dockerd.log   dockerd's and its containerd's log
#   $DOCKER_DIR/cli           the client's configuration (DOCKER_CONFIG)
#
# No bridge, no iptables, no forwarding: containers run with --network none.
# The cgroup parent is /brigtest-docker-<suffix of $DOCKER_DIR>, not
# Docker's /docker, so that the file's cgroups are its own and go with it.
# The image is localhost/brigtest-busybox ($DOCKER_IMAGE), imported from a
# tarball: no registry.

DOCKER_IMAGE=localhost/brigtest-busybox:latest
# Debian's client (docker.io), the daemon's own version: another docker
# may come first on PATH (/usr/local/bin).
DOCKER_CLI=${DOCKER_CLI:-/usr/bin/docker}
DOCKERD=${DOCKERD:-/usr/sbin/dockerd}
# dockerd's containerd namespace (the default): the runtime's state root
# and containerd's bundles are per namespace.
DOCKER_NS=moby
# The options of every container the tests run: brig, no network.
DOCKER_RUN_OPTS=(--runtime brig --network none)

# dk ARGS...: the client against the private dockerd, bounded in time so
# that a hung runtime fails one command instead of stalling the suite.
dk() {
	DOCKER_CONFIG=$DOCKER_DIR/cli timeout -k 5 "${DOCKER_TIMEOUT:-120}" \
		"$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" "$@"
}

# dk_run ARGS...: `docker run` with $DOCKER_RUN_OPTS; ARGS are the rest
# (options, the image and the command).
dk_run() {
	dk run "${DOCKER_RUN_OPTS[@]}" "$@"
}

# docker_storage_driver DIR: overlay2 where DIR's file system can hold its
# layers, else vfs (copies: slow, but works anywhere).
docker_storage_driver() {
	case $(stat -f -c %T "$1") in
	overlayfs | 9p | fuseblk | fuse | nfs | UNKNOWN*) echo vfs ;;
	*) echo overlay2 ;;
	esac
}

# docker_config FILE: the daemon's own configuration file, so that the
# host's /etc/docker/daemon.json (if any) plays no part. dockerd 20.10
# writes its identity key (key.json) to /etc/docker unless told otherwise;
# later versions have no such key and refuse the option.
docker_config() {
	local major
	major=$("$DOCKERD" --version | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')
	if [ -n "$major" ] && [ "$major" -le 20 ]; then
		jq -n --arg k "$DOCKER_DIR/key.json" '{"deprecated-key-path": $k}' >"$1"
	else
		echo '{}' >"$1"
	fi
}

# docker_start: dockerd (and, through it, its containerd) with everything
# under a new $DOCKER_DIR, until `docker info` answers.
docker_start() {
	[ -x "$DOCKERD" ] && [ -x "$DOCKER_CLI" ] ||
		fail "docker is not installed (apt-get install docker.io, or scripts/install-deps.sh)" || return
	DOCKER_DIR=$(mktemp -d /var/tmp/brig-dockertest.XXXXXX)
	DOCKER_CGROUP_PARENT=/brigtest-docker-${DOCKER_DIR##*.}
	# dockerd makes /run/docker/plugins (plugin sockets, a fixed path)
	# whatever its exec root: the file removes it after if it made it.
	DOCKER_MADE_RUN_DIR=""
	[ -e /run/docker ] || DOCKER_MADE_RUN_DIR=/run/docker
	export DOCKER_DIR DOCKER_CGROUP_PARENT DOCKER_MADE_RUN_DIR
	mkdir -p "$DOCKER_DIR/data" "$DOCKER_DIR/exec" "$DOCKER_DIR/cli"
	docker_config "$DOCKER_DIR/daemon.json"
	# No --containerd: dockerd starts a containerd of its own, whose
	# socket, root and state are under the exec and data roots. Its shims'
	# sockets are in containerd's /run/containerd/s, named by a hash of
	# that socket's path: no clash with another containerd.
	# No --default-ulimit: unlike podman, Docker sets no rlimit unless
	# asked, so a runner without CAP_SYS_RESOURCE (which could not raise a
	# hard limit) runs the containers with the limits they inherit.
	setsid "$DOCKERD" --config-file "$DOCKER_DIR/daemon.json" \
		--data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_DIR/exec" \
		--pidfile "$DOCKER_DIR/dockerd.pid" -H "unix://$DOCKER_DIR/docker.sock" \
		--storage-driver "$(docker_storage_driver "$DOCKER_DIR")" \
		--bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
		--userland-proxy=false --cgroup-parent "$DOCKER_CGROUP_PARENT" \
		--add-runtime "brig=$BRIG" \
		--log-level warn >>"$DOCKER_DIR/dockerd.log" 2>&1 </dev/null &
	DOCKERD_PID=$!
	export DOCKERD_PID
	for _ in $(seq 1 300); do
		if dk info >/dev/null 2>&1; then
			# setsid ran in place of the shell's child: the same pid.
			[ "$(cat "$DOCKER_DIR/dockerd.pid")" = "$DOCKERD_PID" ] ||
				fail "dockerd's pid file says $(cat "$DOCKER_DIR/dockerd.pid"), not $DOCKERD_PID" || return
			return 0
		fi
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 0.2
	done
	fail "dockerd did not start; its log: $(tail -n 30 "$DOCKER_DIR/dockerd.log")"
}

# docker_import_busybox: the busybox image $DOCKER_IMAGE, from a root
# made as podman-helpers.bash makes it (a user 1000 too), whose command is
# /bin/sh.
docker_import_busybox() {
	local rootfs=$DOCKER_DIR/rootfs
	image_rootfs "$rootfs"
	tar -C "$rootfs" -cf "$DOCKER_DIR/rootfs.tar" . || fail "tar of $rootfs failed" || return
	dk import --change 'CMD ["/bin/sh"]' "$DOCKER_DIR/rootfs.tar" "$DOCKER_IMAGE" >/dev/null ||
		fail "docker import failed"
}

# docker_remove_all: every container, running or not, removed.
docker_remove_all() {
	local ids
	ids=$(dk ps -aq 2>/dev/null)
	[ -z "$ids" ] && return 0
	# shellcheck disable=SC2086 # one id a word
	dk rm -f $ids >/dev/null 2>&1
	return 0
}

# docker_stop: every container removed, dockerd stopped (TERM, then KILL
# after 20 s) and with it its containerd, any shim of this daemon's left
# killed, what is mounted under $DOCKER_DIR unmounted, the cgroup parent
# and the directory removed. Fails (after cleaning up all the same) when
# dockerd, its containerd or a shim had to be killed or a mount was left:
# a daemon that shuts down cleanly leaves none.
docker_stop() {
	[ -n "${DOCKER_DIR:-}" ] && [ -d "$DOCKER_DIR" ] || return 0
	local ctrd_pid="" pid m d left=""
	if [ -n "${DOCKERD_PID:-}" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
		docker_remove_all
	fi
	ctrd_pid=$(cat "$DOCKER_DIR/exec/containerd/containerd.pid" 2>/dev/null)
	if [ -n "${DOCKERD_PID:-}" ]; then
		kill -TERM "$DOCKERD_PID" 2>/dev/null
		for _ in $(seq 1 200); do
			pid_alive "$DOCKERD_PID" || break
			sleep 0.1
		done
		if pid_alive "$DOCKERD_PID"; then
			left="$left dockerd"
			kill -KILL "$DOCKERD_PID" 2>/dev/null
		fi
	fi
	# dockerd stops its containerd as it exits; not if it was killed.
	if [ -n "$ctrd_pid" ] && pid_alive "$ctrd_pid"; then
		left="$left containerd"
		kill -TERM "$ctrd_pid" 2>/dev/null
		for _ in $(seq 1 50); do
			pid_alive "$ctrd_pid" || break
			sleep 0.1
		done
		kill -KILL "$ctrd_pid" 2>/dev/null
	fi
	for pid in $(docker_shim_pids ""); do
		left="$left shim($pid)"
		kill -KILL "$pid" 2>/dev/null
	done
	# Deepest first: layers' overlays, network namespaces' bind mounts.
	# dockerd unmounts its own as it exits, and any left is reported.
	while read -r m; do
		left="$left mount($m)"
		umount -l "$m" 2>/dev/null
	done < <(grep -o " $DOCKER_DIR/[^ ]*" /proc/self/mounts | sort -r)
	for d in /sys/fs/cgroup/*"$DOCKER_CGROUP_PARENT" /sys/fs/cgroup"$DOCKER_CGROUP_PARENT"; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	# Empty, unless another dockerd has come since.
	[ -z "${DOCKER_MADE_RUN_DIR:-}" ] || rmdir "$DOCKER_MADE_RUN_DIR/plugins" "$DOCKER_MADE_RUN_DIR" 2>/dev/null
	[ -z "$left" ] || echo "# dockerd's log:" "$(tail -n 20 "$DOCKER_DIR/dockerd.log")" >&2
	rm -rf "$DOCKER_DIR"
	[ -z "$left" ] || fail "left after dockerd stopped:$left"
}

# pid_alive PID: the process runs (a zombie, which kill -0 still finds
# until its parent reaps it, does not).
pid_alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

# docker_shim_pids ID: the shim serving this daemon's container ID; with
# an empty ID, every shim of this daemon.
docker_shim_pids() {
	local pid args
	for pid in $(pgrep -f containerd-shim); do
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
		[[ "$args" == *" -address $DOCKER_DIR/"* ]] || continue
		[ -z "${1:-}" ] || [[ "$args" == *" -id $1 "* ]] || continue
		echo "$pid"
	done
}

# docker_show_logs: for a failed test, dockerd's errors and warnings and
# the runtime's own log of each container (the runc shim runs the runtime
# with --log BUNDLE/log.json).
docker_show_logs() {
	local f
	echo "# dockerd's errors and warnings:" >&2
	# Less the noise of every run: the plugins and cgroup files this host
	# lacks, and containerd's cleanup after each shim's exit (the same
	# with runc; it races the normal deletion).
	grep -E 'level=(error|warning)' "$DOCKER_DIR/dockerd.log" |
		grep -vE 'devmapper|blkio|config version|shim disconnected|cleanup warnings' | tail -n 20 >&2
	for f in "$DOCKER_DIR/exec/containerd/daemon/io.containerd.runtime.v2.task/$DOCKER_NS"/*/log.json; do
		[ -s "$f" ] || continue
		echo "# $f:" >&2
		tail -n 10 "$f" >&2
	done
}

# docker_state_dir ID: where the runtime keeps container ID's state: the
# root the shim passes it (docker 20.10 gives every runtime
# EXEC_ROOT/runtime-runc, later versions EXEC_ROOT/runtime-NAME), then
# the namespace.
docker_state_dir() {
	local opts=$DOCKER_DIR/exec/containerd/daemon/io.containerd.runtime.v2.task/$DOCKER_NS/$1/options.json root
	root=$(jq -r '.root // empty' "$opts" 2>/dev/null)
	[ -n "$root" ] || fail "no runtime root in $opts" || return
	echo "$root/$DOCKER_NS/$1"
}

# wait_for_log NAME TEXT: until `docker logs NAME` has the line TEXT.
wait_for_log() {
	for _ in $(seq 60); do
		dk logs "$1" 2>/dev/null | grep -qxF -- "$2" && return 0
		sleep 0.2
	done
	fail "'$2' did not appear in the logs of $1: $(dk logs "$1" 2>&1)"
}

# dk_inspect NAME FORMAT: one `docker inspect --format`.
dk_inspect() {
	dk inspect --format "$2" "$1"
}

# The hooks: one dockerd and one image for the file; every container a
# test leaves removed after it, and on a failure, what dockerd and the
# runtime logged. The tests use Docker's containers, not helpers.bash's
# bundles.
setup_file() {
	docker_start || return
	docker_import_busybox
}

teardown_file() {
	docker_stop
}

setup() {
	[ -n "${DOCKER_DIR:-}" ] || skip "no dockerd"
}

teardown() {
	[ -n "${DOCKER_DIR:-}" ] || return 0
	[ -n "${BATS_TEST_COMPLETED:-}" ] || docker_show_logs
	docker_remove_all
}
