#!/usr/bin/env bats
# `brig features`: what this build supports, as OCI features JSON.

load helpers

setup() {
	setup_bundle
	run brig features
	[ "$status" -eq 0 ]
	FEATURES=$output
}

has() {
	jq -e --arg v "$2" "$1 | index(\$v) != null" <<<"$FEATURES" >/dev/null ||
		fail "features: $1 lacks $2"
}

@test "features prints one JSON object" {
	[ "$(jq -r type <<<"$FEATURES")" = object ]
}

@test "features gives the range of OCI versions" {
	[[ "$(jq -r .ociVersionMin <<<"$FEATURES")" =~ ^1\.[0-9]+\.[0-9]+ ]]
	[[ "$(jq -r .ociVersionMax <<<"$FEATURES")" =~ ^1\.[0-9]+\.[0-9]+ ]]
}

@test "features lists all six hook kinds" {
	for hook in prestart createRuntime createContainer startContainer poststart poststop; do
		has .hooks "$hook"
	done
}

@test "features lists the mount options, rbind among them" {
	for opt in rbind bind ro rw nosuid nodev noexec rprivate rslave rshared; do
		has .mountOptions "$opt"
	done
}

@test "features lists the namespaces" {
	for ns in pid network ipc uts mount user cgroup; do
		has .linux.namespaces "$ns"
	done
}

@test "features says cgroup v1, v2 and systemd are managed" {
	out=$(brig features)
	[ "$(jq -r '.linux.cgroup.v1' <<<"$out")" = true ]
	[ "$(jq -r '.linux.cgroup.v2' <<<"$out")" = true ]
	[ "$(jq -r '.linux.cgroup.systemd' <<<"$out")" = true ]
}

@test "features lists the time namespace" {
	# brig-specific: runc 1.1 has no time namespace.
	has .linux.namespaces time
}

@test "features lists the capabilities" {
	for cap in CAP_CHOWN CAP_KILL CAP_NET_ADMIN CAP_SYS_ADMIN CAP_SETUID CAP_BPF; do
		has .linux.capabilities "$cap"
	done
	[ "$(jq '.linux.capabilities | length' <<<"$FEATURES")" -ge 38 ]
}

@test "every namespace that features lists can be used" {
	for ns in $(jq -r '.linux.namespaces[]' <<<"$FEATURES"); do
		case $ns in
		network) link=net ;;
		mount) link=mnt ;;
		*) link=$ns ;;
		esac
		update_config '.linux.namespaces |= (map(select(.type != $t)) + [{"type": $t}])' --arg t "$ns"
		if [ "$ns" = user ]; then
			update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
				| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
		fi
		set_args readlink "/proc/self/ns/$link"
		run brig run "$CID-$ns"
		[ "$status" -eq 0 ] || fail "namespace $ns: $output"
		[ "$output" != "$(readlink "/proc/self/ns/$link")" ] || fail "namespace $ns was not new"
	done
}
