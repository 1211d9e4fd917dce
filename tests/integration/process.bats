#!/usr/bin/env bats
# The container's process: user, umask, capabilities, no_new_privs,
# rlimits, OOM score, sysctls.

load helpers

# The capability mask of the named capabilities, as /proc/PID/status prints it.
cap_mask() {
	local mask=0 cap n
	for cap in "$@"; do
		case $cap in
		CAP_CHOWN) n=0 ;;
		CAP_KILL) n=5 ;;
		CAP_NET_BIND_SERVICE) n=10 ;;
		CAP_NET_ADMIN) n=12 ;;
		CAP_NET_RAW) n=13 ;;
		CAP_SYS_ADMIN) n=21 ;;
		CAP_AUDIT_WRITE) n=29 ;;
		*) fail "cap_mask: unknown $cap" ;;
		esac
		mask=$((mask | (1 << n)))
	done
	printf '%016x\n' "$mask"
}

status_field() {
	awk -v f="$1:" '$1 == f {print $2}' <<<"$output"
}

@test "the process runs as the uid, gid and additional gids of the config" {
	update_config '.process.user = {"uid": 1000, "gid": 1000, "additionalGids": [2000, 3000]}'
	set_args sh -c 'id -u; id -g; id -G; grep -E "^(Uid|Gid|Groups):" /proc/self/status'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
	groups=" ${lines[2]} "
	[[ "$groups" == *" 2000 "* && "$groups" == *" 3000 "* ]]
	[ "$(squeeze "${lines[3]}")" = "Uid: 1000 1000 1000 1000" ]
	[ "$(squeeze "${lines[4]}")" = "Gid: 1000 1000 1000 1000" ]
	[[ " $(squeeze "${lines[5]}") " == *" 2000 "* ]]
}

@test "a non-root process cannot write where root owns the files" {
	update_config '.root.readonly = false | .process.user = {"uid": 1000, "gid": 1000}'
	set_args sh -c 'touch /etc/x 2>&1; echo rc=$?; touch /home/user/x; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"Permission denied"* ]]
	[ "${lines[1]}" = rc=1 ]
	[ "${lines[2]}" = rc=0 ]
	[ "$(stat -c %u "$ROOTFS/home/user/x")" = 1000 ]
}

@test "the process gets the umask of the config" {
	update_config '.process.user.umask = 63'
	set_args sh -c 'umask; touch /tmp/f; stat -c %a /tmp/f'
	add_mount /tmp tmpfs tmpfs
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0077 ]
	[ "${lines[1]}" = 600 ]
}

@test "the default umask is 0022" {
	update_config 'del(.process.user.umask)'
	set_args sh -c umask
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = 0022 ]
}

@test "the process has exactly the capabilities of the config" {
	update_config '.process.capabilities = {
		"bounding": ["CAP_CHOWN", "CAP_NET_ADMIN", "CAP_KILL"],
		"effective": ["CAP_CHOWN", "CAP_NET_ADMIN"],
		"permitted": ["CAP_CHOWN", "CAP_NET_ADMIN"],
		"inheritable": [], "ambient": []}'
	set_args grep ^Cap /proc/self/status
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(status_field CapEff)" = "$(cap_mask CAP_CHOWN CAP_NET_ADMIN)" ]
	[ "$(status_field CapPrm)" = "$(cap_mask CAP_CHOWN CAP_NET_ADMIN)" ]
	[ "$(status_field CapBnd)" = "$(cap_mask CAP_CHOWN CAP_NET_ADMIN CAP_KILL)" ]
	[ "$(status_field CapInh)" = 0000000000000000 ]
	[ "$(status_field CapAmb)" = 0000000000000000 ]
}

@test "the default capabilities are the spec's three" {
	set_args grep ^Cap /proc/self/status
	run brig run "$CID"
	[ "$status" -eq 0 ]
	want=$(cap_mask CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)
	[ "$(status_field CapEff)" = "$want" ]
	[ "$(status_field CapBnd)" = "$want" ]
}

@test "a dropped capability is really gone: chown fails without CAP_CHOWN" {
	update_config '.root.readonly = false | .process.capabilities = {"bounding": [], "effective": [], "permitted": []}'
	set_args sh -c 'grep ^CapEff /proc/self/status; chown 1000 /etc/passwd 2>&1; echo rc=$?'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(status_field CapEff)" = 0000000000000000 ]
	[[ "$output" == *"Operation not permitted"* ]]
	[ "${lines[-1]}" = rc=1 ]
	[ "$(stat -c %u "$ROOTFS/etc/passwd")" = 0 ]
}

@test "a non-root user gets ambient capabilities" {
	update_config '.process.user = {"uid": 1000, "gid": 1000}
		| .process.capabilities = {
			"bounding": ["CAP_NET_BIND_SERVICE"], "effective": ["CAP_NET_BIND_SERVICE"],
			"permitted": ["CAP_NET_BIND_SERVICE"], "inheritable": ["CAP_NET_BIND_SERVICE"],
			"ambient": ["CAP_NET_BIND_SERVICE"]}'
	set_args grep ^Cap /proc/self/status
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(status_field CapEff)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
	[ "$(status_field CapAmb)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
}

@test "noNewPrivileges true sets NoNewPrivs" {
	update_config '.process.noNewPrivileges = true'
	set_args grep ^NoNewPrivs /proc/self/status
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "NoNewPrivs: 1" ]
}

@test "noNewPrivileges false leaves NoNewPrivs unset" {
	update_config '.process.noNewPrivileges = false'
	set_args grep ^NoNewPrivs /proc/self/status
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(squeeze "$output")" = "NoNewPrivs: 0" ]
}

@test "rlimits of the config are applied" {
	update_config '.process.rlimits = [
		{"type": "RLIMIT_NOFILE", "soft": 123, "hard": 456},
		{"type": "RLIMIT_NPROC", "soft": 77, "hard": 77},
		{"type": "RLIMIT_CORE", "soft": 0, "hard": 0}]'
	set_args sh -c 'ulimit -n; ulimit -H -n; ulimit -u; ulimit -c'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 123 ]
	[ "${lines[1]}" = 456 ]
	[ "${lines[2]}" = 77 ]
	[ "${lines[3]}" = 0 ]
}

@test "an unknown rlimit type fails the create" {
	update_config '.process.rlimits = [{"type": "RLIMIT_NOSUCH", "soft": 1, "hard": 1}]'
	run --separate-stderr brig run "$CID"
	assert_one_line_error RLIMIT_NOSUCH
	assert_no_leftovers "$CID"
}

@test "oomScoreAdj is written for the process" {
	update_config '.process.oomScoreAdj = 500'
	set_args cat /proc/self/oom_score_adj
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = 500 ]
}

@test "without oomScoreAdj the process keeps brig's score" {
	update_config 'del(.process.oomScoreAdj)'
	set_args cat /proc/self/oom_score_adj
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /proc/self/oom_score_adj)" ]
}

@test "a network sysctl applies in the container's network namespace only" {
	host=$(cat /proc/sys/net/ipv4/ip_forward)
	update_config '.linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	set_args cat /proc/sys/net/ipv4/ip_forward
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
	[ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$host" ]
}

@test "an ipc sysctl applies in the container's ipc namespace only" {
	host=$(cat /proc/sys/kernel/shmmax)
	update_config '.linux.sysctl = {"kernel.shmmax": "123456789", "kernel.msgmax": "4096"}'
	set_args sh -c 'cat /proc/sys/kernel/shmmax /proc/sys/kernel/msgmax'
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 123456789 ]
	[ "${lines[1]}" = 4096 ]
	[ "$(cat /proc/sys/kernel/shmmax)" = "$host" ]
}

@test "a sysctl of the host's namespace is refused" {
	# vm.* is not namespaced: setting it would change the host.
	host=$(cat /proc/sys/vm/max_map_count)
	update_config '.linux.sysctl = {"vm.max_map_count": $v}' --arg v "$((host + 1))"
	run --separate-stderr brig run "$CID"
	now=$(cat /proc/sys/vm/max_map_count)
	echo "$host" >/proc/sys/vm/max_map_count
	[ "$now" = "$host" ]
	assert_one_line_error vm.max_map_count
	assert_no_leftovers "$CID"
}

@test "a net sysctl without a network namespace is refused" {
	update_config '.linux.namespaces |= map(select(.type != "network"))
		| .linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	host=$(cat /proc/sys/net/ipv4/ip_forward)
	run --separate-stderr brig run "$CID"
	assert_one_line_error net.ipv4.ip_forward
	[ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$host" ]
	assert_no_leftovers "$CID"
}

@test "an args[0] that is not in the container fails create, naming it" {
	set_args no-such-program --flag
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error no-such-program
	assert_no_leftovers "$CID"
}

@test "an args[0] that is not executable fails create" {
	update_config '.root.readonly = false'
	echo "not a program" >"$ROOTFS/bin/plain-file"
	set_args /bin/plain-file
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error plain-file
	assert_no_leftovers "$CID"
}
