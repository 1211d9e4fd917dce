#!/usr/bin/env bats
# OCI hooks: when each kind runs, what it reads on stdin, and what a
# failing or hanging hook does to the container.

load helpers

setup() {
	setup_bundle
	LOGDIR=$BATS_TEST_TMPDIR/hooklog
	LOG=$LOGDIR/log
	mkdir -p "$LOGDIR"
	: >"$LOG"
	# The container sees the same log at /hooklog/log.
	add_bind_mount "$LOGDIR" /hooklog

	# A host hook: records its kind (argv[1]), its environment variable
	# HOOKVAR, and the state JSON from stdin, on one line.
	HOOK=$BATS_TEST_TMPDIR/record-hook
	cat >"$HOOK" <<-EOF_HOOK
		#!/bin/sh
		state=\$(tr -d '\n')
		echo "\$1 \${HOOKVAR:--} \$state" >>"$LOG"
	EOF_HOOK
	chmod +x "$HOOK"
	# startContainer hooks run inside the container: the same script,
	# written to the container's log.
	sed "s,$LOG,/hooklog/log," "$HOOK" >"$ROOTFS/bin/record-hook"
	chmod +x "$ROOTFS/bin/record-hook"
}

# add_hook KIND PATH [ARG...]: appends a hook; argv[0] is the path's name.
add_hook() {
	local kind=$1 path=$2 args
	shift 2
	args=$(json_array "$(basename "$path")" "$@")
	update_config '.hooks[$k] += [{path: $p, args: $a}]' \
		--arg k "$kind" --arg p "$path" --argjson a "$args"
}

add_all_hooks() {
	add_hook prestart "$HOOK" prestart
	add_hook createRuntime "$HOOK" createRuntime
	add_hook createContainer "$HOOK" createContainer
	add_hook startContainer /bin/record-hook startContainer
	add_hook poststart "$HOOK" poststart
	add_hook poststop "$HOOK" poststop
}

# The kinds recorded so far, space-separated, in order.
recorded_kinds() {
	awk '{print $1}' "$LOG" | tr '\n' ' ' | sed 's/ $//'
}

# recorded_state KIND: the state JSON the hook of that kind read.
recorded_state() {
	awk -v k="$1" '$1 == k {$1 = ""; $2 = ""; print; exit}' "$LOG"
}

# position KIND: the line number of KIND's first record in the log.
position() {
	awk -v k="$1" '$1 == k {print NR; exit}' "$LOG"
}

@test "all six hook kinds run, in the order of the runtime spec" {
	add_all_hooks
	set_args sh -c 'echo process >>/hooklog/log; exec sleep 100'

	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	[ "$(head -3 "$LOG" | awk '{print $1}' | tr '\n' ' ')" = "prestart createRuntime createContainer " ]

	run brig start "$CID"
	[ "$status" -eq 0 ]
	wait_for_status "$CID" running
	for _ in $(seq 50); do grep -q ^process "$LOG" && grep -q ^poststart "$LOG" && break; sleep 0.1; done
	# startContainer runs in the container, just before the process.
	[ "$(position startContainer)" -gt "$(position createContainer)" ]
	[ "$(position process)" -gt "$(position startContainer)" ]
	[ -n "$(position poststart)" ]

	run brig kill "$CID" KILL
	[ "$status" -eq 0 ]
	wait_for_status "$CID" stopped
	[ -z "$(position poststop)" ]
	run brig delete "$CID"
	[ "$status" -eq 0 ]
	[ "$(awk '{print $1}' "$LOG" | tail -1)" = poststop ]
	# Each hook ran once.
	[ "$(grep -c . "$LOG")" -eq 7 ]
}

@test "poststart hooks run at start, not at create" {
	# brig-specific: runc 1.1 runs poststart hooks during create (a bug
	# fixed in runc 1.2).
	add_hook poststart "$HOOK" poststart
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	[ -z "$(position poststart)" ]
	run brig start "$CID"
	[ "$status" -eq 0 ]
	for _ in $(seq 50); do [ -n "$(position poststart)" ] && break; sleep 0.1; done
	[ "$(jq -r .status <<<"$(recorded_state poststart)")" = running ]
}

@test "hooks read the container's state on stdin" {
	add_all_hooks
	set_args sleep 100
	run brig_detached create "$CID"
	[ "$status" -eq 0 ]
	pid=$(container_pid "$CID")
	run brig start "$CID"
	[ "$status" -eq 0 ]
	for _ in $(seq 50); do grep -q ^poststart "$LOG" && break; sleep 0.1; done
	run brig delete --force "$CID"
	[ "$status" -eq 0 ]

	for kind in prestart createRuntime createContainer startContainer poststart poststop; do
		state=$(recorded_state "$kind")
		[ -n "$state" ] || fail "$kind did not run"
		jq -e . <<<"$state" >/dev/null || fail "$kind read no JSON: $state"
		[ "$(jq -r .id <<<"$state")" = "$CID" ] || fail "$kind: id"
		[ "$(jq -r .bundle <<<"$state")" = "$BUNDLE" ] || fail "$kind: bundle"
		[[ "$(jq -r .ociVersion <<<"$state")" =~ ^1\. ]] || fail "$kind: ociVersion"
		[[ "$(jq -r .status <<<"$state")" =~ ^(created|running|stopped)$ ]] ||
			fail "$kind: status $(jq -r .status <<<"$state")"
	done
	# The create-time hooks run once the environment is set up: `created`,
	# as the runtime-spec's status list says (runtime-tools' hooks_stdin).
	for kind in prestart createRuntime createContainer; do
		[ "$(jq -r .status <<<"$(recorded_state "$kind")")" = created ] || fail "$kind: status"
	done
	[ "$(jq -r .status <<<"$(recorded_state poststart)")" = running ] || fail "poststart: status"
	[ "$(jq -r .status <<<"$(recorded_state poststop)")" = stopped ] || fail "poststop: status"
	for kind in prestart createRuntime poststart; do
		[ "$(jq -r .pid <<<"$(recorded_state "$kind")")" = "$pid" ] || fail "$kind: pid"
	done
	# Hooks that run in the container's namespaces may see the pid as it
	# is there.
	for kind in createContainer startContainer; do
		[[ "$(jq -r .pid <<<"$(recorded_state "$kind")")" =~ ^($pid|1)$ ]] || fail "$kind: pid"
	done
	[ "$(jq -r .status <<<"$(recorded_state poststop)")" = stopped ]
}

@test "hooks get the args and env of the config" {
	update_config '.hooks.prestart = [{path: $p, args: ["record-hook", "custom-arg"], env: ["HOOKVAR=from-config"]}]' \
		--arg p "$HOOK"
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
	read -r kind var _ <"$LOG"
	[ "$kind" = custom-arg ]
	[ "$var" = from-config ]
}

@test "createContainer hooks run in the container's root: a relative path lands there" {
	# A hook that writes a relative path, as GPU toolkits' hooks do.
	cat >"$BATS_TEST_TMPDIR/pwd-hook" <<-EOF_HOOK
		#!/bin/sh
		pwd >>"$LOG"
		echo made-by-hook >hook-made
	EOF_HOOK
	chmod +x "$BATS_TEST_TMPDIR/pwd-hook"
	add_hook createContainer "$BATS_TEST_TMPDIR/pwd-hook"
	set_args cat /hook-made
	run brig run "$CID"
	[ "$status" -eq 0 ] || fail "run: $output"
	[ "$output" = made-by-hook ] || fail "the container's /hook-made: $output"
	[ "$(cat "$LOG")" = "$(cd "$ROOTFS" && pwd -P)" ] || fail "the hook ran in $(cat "$LOG")"
}

@test "poststop runs when run deletes the container it ran" {
	add_hook poststop "$HOOK" poststop
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(recorded_kinds)" = poststop ]
}

@test "a failing prestart hook fails create and leaves nothing" {
	add_hook prestart /bin/false
	add_hook poststart "$HOOK" poststart
	set_args sh -c 'echo ran >>/hooklog/log'
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error brig:prestart
	assert_no_leftovers "$CID"
	refute grep -q ran "$LOG"
}

@test "a failing createRuntime hook fails create and leaves nothing" {
	add_hook createRuntime /bin/sh -c 'exit 3'
	set_args sh -c 'echo ran >>/hooklog/log'
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error brig:createRuntime
	assert_no_leftovers "$CID"
	refute grep -q ran "$LOG"
}

@test "a failing createContainer hook fails create and leaves nothing" {
	add_hook createContainer /bin/false
	set_args sh -c 'echo ran >>/hooklog/log'
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error brig:createContainer
	assert_no_leftovers "$CID"
	refute grep -q ran "$LOG"
}

@test "a hook that does not exist fails create" {
	add_hook prestart /no/such/hook
	run --separate-stderr brig_detached create "$CID"
	assert_one_line_error /no/such/hook
	assert_no_leftovers "$CID"
}

@test "a hook past its timeout is killed and fails create" {
	# A duration no other process on the machine is likely to sleep.
	nap="30.$RANDOM"
	update_config '.hooks.prestart = [{path: "/bin/sleep", args: ["sleep", $n], timeout: 1}]' --arg n "$nap"
	start=$(date +%s)
	run --separate-stderr brig_detached create "$CID"
	elapsed=$(($(date +%s) - start))
	assert_one_line_error brig:prestart
	[ "$elapsed" -lt 10 ]
	assert_no_leftovers "$CID"
	refute pgrep -f "^sleep $nap$" >/dev/null
}

@test "a hook within its timeout runs normally" {
	update_config '.hooks.prestart = [{path: $p, args: ["record-hook", "prestart"], timeout: 10}]' --arg p "$HOOK"
	set_args true
	run brig run "$CID"
	[ "$status" -eq 0 ]
	[ "$(recorded_kinds)" = prestart ]
}

@test "a failing startContainer hook fails start, and the process never runs" {
	add_hook startContainer /bin/false
	set_args sh -c 'echo ran >/hooklog/ran'
	brig_detached create -b "$BUNDLE" "$CID"
	run --separate-stderr brig start "$CID"
	assert_one_line_error startContainer brig:"$CID"
	[ ! -e "$LOGDIR/ran" ] || fail "the process ran after its startContainer hook failed"
	wait_for_status "$CID" stopped
	brig delete "$CID"
}

@test "a failing poststart hook warns, the others still run and the container runs" {
	add_hook poststart /bin/false
	add_hook poststart "$HOOK" poststart
	set_args sleep 100
	brig_detached create -b "$BUNDLE" "$CID"
	run --separate-stderr brig start "$CID"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *warning*poststart* ]] || fail "no warning: $stderr"
	[ "$(recorded_kinds)" = poststart ] || fail "second poststart hook did not run: $(recorded_kinds)"
	[ "$(container_status "$CID")" = running ]
}

@test "a failing poststop hook warns and delete still removes the container" {
	add_hook poststop /bin/false
	add_hook poststop "$HOOK" poststop
	set_args true
	brig_detached create -b "$BUNDLE" "$CID"
	brig start "$CID"
	wait_for_status "$CID" stopped
	run --separate-stderr brig delete "$CID"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *warning*poststop* ]] || fail "no warning: $stderr"
	[ "$(recorded_kinds)" = poststop ]
	assert_no_leftovers "$CID"
}
