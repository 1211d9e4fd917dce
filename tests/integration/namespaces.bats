#!/usr/bin/env bats
# Namespaces from linux.namespaces: new ones, shared ones, joined ones.

load helpers

teardown() {
	teardown_bundle
	if [ -n "${NETNS:-}" ]; then
		ip netns delete "$NETNS" 2>/dev/null || true
	fi
}

# host_ns TYPE: the host's namespace of that type, e.g. "net:[4026531840]".
host_ns() {
	readlink "/proc/self/ns/$1"
}

@test "the container gets its hostname from the config" {
	update_config '.hostname = "box-one"'
	set_args hostname
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = box-one ]
	# The host's name did not change.
	[ "$(hostname)" != box-one ]
}

@test "the container gets its domainname from the config" {
	# brig-specific: runc 1.1 ignores .domainname (it came in runc 1.2).
	update_config '.hostname = "box-one" | .domainname = "example.org"'
	set_args cat /proc/sys/kernel/domainname
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = example.org ]
	[ "$(cat /proc/sys/kernel/domainname)" != example.org ]
}

@test "the container's process is pid 1 in its pid namespace" {
	set_args sh -c 'echo $$; ls /proc | grep -c "^[0-9]"'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1 ]
	# sh, ls and grep: nothing of the host is visible.
	[ "${lines[1]}" -le 3 ]
}

@test "a new network namespace has only lo, and it is up" {
	set_args sh -c 'ls /sys/class/net; cat /sys/class/net/lo/flags; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; ip link show lo'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = lo ]
	# IFF_UP is bit 0 of the flags.
	[ $((${lines[1]} & 1)) -eq 1 ]
	[ "${lines[2]}" = lo ]
	[[ "${lines[3]}" == *"<LOOPBACK,UP"* ]]
}

@test "loopback works in a new network namespace" {
	# busybox ping needs a raw socket.
	update_config '.process.capabilities |= with_entries(.value += ["CAP_NET_RAW"])'
	set_args sh -c 'ping -c 1 -W 2 127.0.0.1 >/dev/null && echo reachable'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = reachable ]
}

@test "ipc, uts, net, pid and mount namespaces are distinct from the host's" {
	set_args sh -c 'for t in ipc uts net pid mnt; do readlink /proc/self/ns/$t; done'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	i=0
	for t in ipc uts net pid mnt; do
		[[ "${lines[$i]}" == "$t:["*"]" ]] || fail "bad link ${lines[$i]}"
		[ "${lines[$i]}" != "$(host_ns "$t")" ] || fail "$t namespace is the host's"
		i=$((i + 1))
	done
}

@test "a namespace not in the config is shared with the host" {
	update_config '.linux.namespaces |= map(select(.type != "network" and .type != "ipc"))'
	set_args sh -c 'readlink /proc/self/ns/net; readlink /proc/self/ns/ipc; readlink /proc/self/ns/uts'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(host_ns net)" ]
	[ "${lines[1]}" = "$(host_ns ipc)" ]
	[ "${lines[2]}" != "$(host_ns uts)" ]
}

@test "the container joins an existing network namespace by path" {
	NETNS=brig-test-$RANDOM-$$
	ip netns add "$NETNS"
	ip -n "$NETNS" link set lo up
	want=$(ip netns exec "$NETNS" readlink /proc/self/ns/net)
	update_config '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
		--arg p "/var/run/netns/$NETNS"
	set_args readlink /proc/self/ns/net
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
	[ "$output" != "$(host_ns net)" ]
}

@test "a namespace type listed twice alike is one namespace; with two paths, an error" {
	update_config '.linux.namespaces += [{"type": "pid"}, {"type": "uts"}]'
	set_args sh -c 'echo $$'
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "pid and uts listed twice: $output"
	[ "$output" = 1 ]
	update_config '.linux.namespaces += [{"type": "network", "path": "/proc/1/ns/net"}]'
	run --separate-stderr brig run "$CID"
	assert_one_line_error network brig:twice
	assert_no_leftovers "$CID"
}

@test "a namespace path that does not exist fails the create" {
	update_config '.linux.namespaces |= map(if .type == "network" then .path = "/var/run/netns/brig-no-such-ns" else . end)'
	run --separate-stderr brig run "$CID"
	assert_one_line_error brig-no-such-ns
	assert_no_leftovers "$CID"
}

@test "a user namespace maps the ids of the config" {
	update_config '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 200000, "size": 65536}]'
	set_args sh -c 'id -u; id -g; cat /proc/self/uid_map; cat /proc/self/gid_map; exec sleep 100'
	run brig_detached run -d "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	wait_for_file "$CT_OUT"
	for _ in $(seq 20); do [ "$(wc -l <"$CT_OUT")" -ge 4 ] && break; sleep 0.1; done

	mapfile -t out <"$CT_OUT"
	[ "${out[0]}" = 0 ]
	[ "${out[1]}" = 0 ]
	[ "$(squeeze "${out[2]}")" = "0 100000 65536" ]
	[ "$(squeeze "${out[3]}")" = "0 200000 65536" ]
	# Seen from the host, the process runs as the mapped ids.
	pid=$(container_pid "$CID")
	[ "$(stat -c %u "/proc/$pid")" = 100000 ]
	[ "$(stat -c %g "/proc/$pid")" = 200000 ]
	[ "$(readlink "/proc/$pid/ns/user")" != "$(host_ns user)" ]
}

@test "a user namespace with a network namespace joined by path: the net sysctls land in it" {
	# As a pod's containers with a user namespace: the network namespace
	# is the host's making, so its sysctls are written before the user
	# namespace is entered; the IPC one is the container's and written inside.
	NETNS=brig-test-$RANDOM-$$
	ip netns add "$NETNS"
	update_config '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)
		| .linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.sysctl = {"net.ipv4.ip_unprivileged_port_start": "0", "kernel.msgmax": "12345"}' \
		--arg p "/var/run/netns/$NETNS"
	set_args sh -c 'cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/msgmax'
	run brig run "$CID"
	host=$(ip netns exec "$NETNS" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
	ip netns del "$NETNS"
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$(tr '\n' ' ' <<<"$output")" = "0 12345 " ] || fail "inside: $output"
	[ "$host" = 0 ]
	[ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" != 0 ] || fail "the host's own changed"
}

@test "a user namespace: bind sources only the host's root can reach still mount (file and dir, rbind)" {
	# As a pod's volumes under the kubelet's 0750 dirs: the runtime opens
	# them before the init enters the user namespace.
	private=$BATS_TEST_TMPDIR/private
	mkdir -p "$private/vol/sub"
	echo in-vol >"$private/vol/sub/file"
	echo a-file >"$private/file"
	chmod 0700 "$private"
	# The destinations are the image's (its root is the host's root's).
	mkdir -p "$ROOTFS/vol" "$ROOTFS/etc"
	touch "$ROOTFS/etc/a-file"
	update_config '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	add_bind_mount "$private/vol" /vol
	add_bind_mount "$private/file" /etc/a-file ro
	set_args sh -c 'cat /vol/sub/file /etc/a-file; touch /etc/a-file 2>/dev/null || echo ro'
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$(tr '\n' ' ' <<<"$output")" = "in-vol a-file ro " ] || fail "inside: $output"
	assert_no_leftovers "$CID"
}

@test "a user namespace maps a non-root user" {
	update_config '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .process.user = {"uid": 1000, "gid": 1000}'
	set_args sh -c 'id -u; id -g'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
}

@test "a time namespace offsets the boot and monotonic clocks" {
	# brig-specific: runc 1.1 has no time namespace support.
	update_config '.linux.namespaces += [{"type": "time"}]
		| .linux.timeOffsets = {"boottime": {"secs": 864000, "nanosecs": 0},
		                        "monotonic": {"secs": 864000, "nanosecs": 0}}'
	set_args sh -c 'cut -d" " -f1 /proc/uptime; cat /proc/self/timens_offsets; readlink /proc/self/ns/time'
	host_uptime=$(cut -d' ' -f1 /proc/uptime)
	run brig run "$CID"
	[ "$status" -eq 0 ]
	inside=${lines[0]%.*}
	host=${host_uptime%.*}
	[ "$inside" -ge $((host + 864000)) ]
	[ "$inside" -le $((host + 864000 + 30)) ]
	printf '%s\n' "${lines[@]}" | grep -Eq '^monotonic +864000 +0$'
	printf '%s\n' "${lines[@]}" | grep -Eq '^boottime +864000 +0$'
	[ "${lines[-1]}" != "$(host_ns time)" ]
}

@test "exec into a container with a time namespace joins it, and its pid namespace" {
	update_config '.linux.namespaces += [{"type": "time"}]
		| .linux.timeOffsets = {"boottime": {"secs": 864000, "nanosecs": 0},
		                        "monotonic": {"secs": 864000, "nanosecs": 0}}'
	set_args sleep 100
	brig_detached run -d "$CID"
	host_uptime=$(cut -d' ' -f1 /proc/uptime)
	run brig exec "$CID" sh -c 'cut -d" " -f1 /proc/uptime; echo "pid $$"; readlink /proc/self/ns/time; readlink /proc/self/ns/pid'
	[ "$status" -eq 0 ]
	inside=${lines[0]%.*}
	[ "$inside" -ge $((${host_uptime%.*} + 864000)) ] || fail "uptime inside: ${lines[0]}"
	# pid 1 is the init: the exec'd shell has a small pid of the container's.
	[[ "${lines[1]}" =~ ^pid\ [0-9]{1,3}$ ]] || fail "not in the container's pid namespace: ${lines[1]}"
	init=$(container_pid "$CID")
	[ "${lines[2]}" = "$(readlink "/proc/$init/ns/time")" ]
	[ "${lines[3]}" = "$(readlink "/proc/$init/ns/pid")" ]
	# brig's own namespaces for children are its own again afterwards:
	# a second exec lands in the same place.
	run brig exec "$CID" sh -c 'readlink /proc/self/ns/pid'
	[ "$output" = "$(readlink "/proc/$init/ns/pid")" ]
}

@test "exec into a user-namespaced container joins its user and pid namespaces" {
	update_config '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	set_args sleep 100
	brig_detached run -d "$CID"
	brig exec "$CID" sleep 7 >/dev/null 2>&1 &
	for _ in $(seq 50); do
		pid=$(pgrep -f '^sleep 7$' | head -1)
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "the exec'd process did not show up"
	[ "$(stat -c %u "/proc/$pid")" = 100000 ]
	init=$(container_pid "$CID")
	[ "$(readlink "/proc/$pid/ns/user")" = "$(readlink "/proc/$init/ns/user")" ]
	[ "$(readlink "/proc/$pid/ns/pid")" = "$(readlink "/proc/$init/ns/pid")" ]
	kill "$pid"
	wait || true
}
