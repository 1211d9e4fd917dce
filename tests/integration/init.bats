#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031,SC2154 # inner shells' $vars, bats' own variables
# brig-init, the sandbox's PID 1, run directly on the host: as a child
# subreaper (no namespace needed), and as the PID 1 of a new pid namespace
# (unshare --pid --fork --mount-proc), which is how sandboxes run it.

bats_require_minimum_version 1.5.0

INIT=${BRIG_INIT:-$(dirname "${BRIG:-${top_srcdir:-$BATS_TEST_DIRNAME/../..}/brig}")/brig-init}

setup() {
	[ -x "$INIT" ] || {
		echo "no brig-init at $INIT (build it, or set BRIG_INIT)" >&2
		return 1
	}
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/brig-init.XXXXXX")
	BG=""
}

teardown() {
	# A failed test must not leave a supervisor (and its services) behind.
	if [ -n "$BG" ]; then
		pkill -KILL -P "$BG" 2>/dev/null || true
		kill -KILL "$BG" 2>/dev/null || true
		wait "$BG" 2>/dev/null || true
	fi
	rm -rf "$T"
}

# as_pid1 ARGS...: brig-init as the PID 1 of a new pid namespace.
as_pid1() {
	unshare --pid --fork --mount-proc "$INIT" "$@"
}

# wait_for FILE [SECONDS]: until FILE exists and is not empty.
wait_for() {
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1" >&2
	return 1
}

# Starts brig-init in the background (MODE: host or pid1); sets BG to the
# brig-init process itself (inside unshare for pid1) and waits for READY.
start_bg() {
	local mode=$1 ready=$2
	shift 2
	if [ "$mode" = pid1 ]; then
		unshare --pid --fork --mount-proc "$INIT" "$@" >"$T/out" 2>"$T/err" &
		UNSHARE=$!
		wait_for "$ready"
		BG=$(pgrep -P "$UNSHARE")
	else
		"$INIT" "$@" >"$T/out" 2>"$T/err" &
		BG=$!
		UNSHARE=$BG
		wait_for "$ready"
	fi
	[ -n "$BG" ]
}

# stop_bg SIGNAL: sends it to brig-init, waits; STATUS is its exit status.
stop_bg() {
	kill -"$1" "$BG"
	STATUS=0
	wait "$UNSHARE" || STATUS=$?
	BG=""
}

@test "brig-init --help prints the usage and exits 0" {
	run "$INIT" --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: brig-init [--config FILE] [--grace SECONDS] [--exec-port] [--] [COMMAND [ARG...]]" ]]
	[[ "$output" == *"brig-init(8)"* ]]
	[ -f "${top_srcdir:-$BATS_TEST_DIRNAME/../..}/man/brig-init.8" ]
}

@test "brig-init is a static binary" {
	# No interpreter: nothing of the sandbox's tree is needed to start it.
	run readelf --program-headers "$INIT"
	[ "$status" -eq 0 ]
	[[ "$output" == *LOAD* ]]
	[[ "$output" != *INTERP* ]]
}

@test "the main program's exit status is brig-init's (subreaper)" {
	run "$INIT" -- sh -c 'exit 7'
	[ "$status" -eq 7 ]
	run "$INIT" sh -c 'kill -KILL $$'
	[ "$status" -eq 137 ]
}

@test "the main program's exit status is brig-init's (PID 1)" {
	run as_pid1 -- sh -c 'echo "pid of my parent: $PPID"; exit 9'
	[ "$status" -eq 9 ]
	[ "$output" = "pid of my parent: 1" ]
	run as_pid1 sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
}

@test "a missing main program: 127 and a message" {
	run -127 --separate-stderr "$INIT" -- /nonexistent/prog
	[ "$status" -eq 127 ]
	[[ "$stderr" == *"exec /nonexistent/prog: No such file or directory"* ]]
}

# The orphan (sleep) must be adopted by brig-init, and not stay a zombie
# once it exits (a zombie keeps its /proc entry).
zombie_script='sh -c "sleep 1.5 & echo \$! >$T/bg"
bg=$(cat $T/bg)
for i in $(seq 60); do [ "$(ps -o ppid= -p $bg | tr -d " ")" = "$PPID" ] && break; sleep 0.05; done
echo "adopted by $(ps -o ppid= -p $bg | tr -d " "), parent $PPID"
for i in $(seq 100); do [ -e /proc/$bg ] || break; sleep 0.05; done
if [ -e /proc/$bg ]; then echo "left: $(ps -o stat= -p $bg)"; else echo reaped; fi'

check_reaped() {
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^adopted\ by\ ([0-9]+),\ parent\ ([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	[ "${lines[1]}" = reaped ]
}

@test "orphans are adopted and reaped (subreaper)" {
	export T
	run "$INIT" -- sh -c "$zombie_script"
	check_reaped
}

@test "orphans are adopted and reaped (PID 1)" {
	export T
	run as_pid1 -- sh -c "$zombie_script"
	check_reaped
	[[ "${lines[0]}" == *"parent 1" ]]
}

main_traps='trap "echo HUP >>$T/got" HUP
trap "echo TERM >>$T/got; exit 3" TERM
echo ready >$T/ready
while :; do sleep 0.05; done'

forward_test() {
	export T
	start_bg "$1" "$T/ready" -- sh -c "$main_traps"
	kill -HUP "$BG"
	wait_for "$T/got"
	[ "$(cat "$T/got")" = HUP ]
	stop_bg TERM
	[ "$STATUS" -eq 3 ]
	[ "$(cat "$T/got")" = "HUP
TERM" ]
}

@test "HUP and TERM are forwarded to the main program (subreaper)" {
	forward_test host
}

@test "HUP and TERM are forwarded to the main program (PID 1)" {
	forward_test pid1
}

@test "INT is forwarded to the main program" {
	export T
	start_bg host "$T/ready" -- sh -c 'trap "exit 4" INT; echo ready >$T/ready; while :; do sleep 0.05; done'
	stop_bg INT
	[ "$STATUS" -eq 4 ]
}

@test "QUIT, USR1, USR2 and WINCH reach the main program alone and stop nothing (PID 1)" {
	export T
	cat >"$T/init.conf" <<-EOF
		[program:svc]
		command=sh -c 'trap "echo svc >>$T/got" QUIT USR1; echo up >$T/svc-up; while :; do sleep 0.05; done'
	EOF
	start_bg pid1 "$T/ready" --config "$T/init.conf" -- sh -c 'for s in USR1 USR2 WINCH; do trap "echo $s >>$T/got" $s; done
		trap "echo QUIT >>$T/got; exit 5" QUIT; echo ready >$T/ready; while :; do sleep 0.05; done'
	wait_for "$T/svc-up"
	for s in USR1 USR2 WINCH; do
		kill -"$s" "$BG"
		for _ in $(seq 1 100); do
			grep -qx "$s" "$T/got" 2>/dev/null && break
			sleep 0.05
		done
	done
	[ "$(cat "$T/got")" = "USR1
USR2
WINCH" ] || fail "got: $(cat "$T/got")"
	# An image whose stop signal is QUIT: the program exits, and init with it.
	stop_bg QUIT
	[ "$STATUS" -eq 5 ]
	run ! grep -x svc "$T/got"
}

@test "a service starts, as the configured user, with the environment" {
	cat >"$T/init.conf" <<-EOF
		[program:who]
		command = sh -c 'echo "\$(id -u) \$FROM_INIT \$OWN \$SECOND \$HOME" > $T/who.tmp; mv $T/who.tmp $T/who; sleep 100'
		user = nobody
		directory = /
		environment = OWN=mine,SECOND="a,b"
	EOF
	chmod 0777 "$T"
	FROM_INIT=inherited run "$INIT" --config "$T/init.conf" -- sh -c "while [ ! -s $T/who ]; do sleep 0.05; done"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/who")" = "65534 inherited mine a,b /nonexistent" ]
}

@test "services get HUP, and the stop signal on TERM (PID 1)" {
	# A command without shell syntax is exec'd directly: the script is the service.
	cat >"$T/svc.sh" <<-EOF
		trap "echo HUP >>$T/svc" HUP
		trap "echo INT >>$T/svc; exit 0" INT
		echo up >$T/ready
		while :; do sleep 0.05; done
	EOF
	cat >"$T/init.conf" <<-EOF
		[program:svc]
		command = sh $T/svc.sh
		stopsignal = INT
	EOF
	start_bg pid1 "$T/ready" --config "$T/init.conf"
	kill -HUP "$BG"
	wait_for "$T/svc"
	stop_bg TERM
	[ "$STATUS" -eq 0 ]
	[ "$(cat "$T/svc")" = "HUP
INT" ]
}

@test "without a command brig-init stays up until TERM, then exits 0" {
	cat >"$T/init.conf" <<-EOF
		[program:svc]
		command = sh -c 'echo \$\$ > $T/ready; exec sleep 1000'
	EOF
	start_bg host "$T/ready" --config "$T/init.conf"
	sleep 0.5
	kill -0 "$BG"
	svc=$(cat "$T/ready")
	stop_bg TERM
	[ "$STATUS" -eq 0 ]
	run ! kill -0 "$svc"
}

@test "a crashing service is restarted with backoff 1 s, 2 s, 4 s, then given up" {
	cat >"$T/init.conf" <<-EOF
		[program:crash]
		command = sh -c 'date +%s%N >> $T/starts; exit 1'
		startretries = 3
	EOF
	run --separate-stderr "$INIT" --config "$T/init.conf" -- sleep 8.5
	[ "$status" -eq 0 ]
	mapfile -t starts <"$T/starts"
	[ "${#starts[@]}" -eq 4 ]
	gaps=""
	for i in 1 2 3; do
		gaps="$gaps $(((starts[i] - starts[i - 1]) / 100000000))"
	done
	echo "gaps in tenths of a second:$gaps"
	read -r g1 g2 g3 <<<"$gaps"
	# Lower bounds are the backoff; upper ones leave room for a loaded host.
	((g1 >= 9 && g1 <= 20 && g2 >= 19 && g2 <= 30 && g3 >= 39 && g3 <= 55))
	[[ "$stderr" == *"crash: exit status 1"* ]]
	[[ "$stderr" == *"crash: exited within 1s 4 times in a row, not restarted"* ]]
}

@test "autorestart=false: an exited service stays down" {
	cat >"$T/init.conf" <<-EOF
		[program:once]
		command = sh -c 'echo x >> $T/starts; exit 1'
		autorestart = false
	EOF
	run "$INIT" --config "$T/init.conf" -- sleep 2.5
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/starts")" -eq 1 ]
}

@test "autorestart=unexpected restarts on an unexpected exit code only" {
	cat >"$T/init.conf" <<-EOF
		[program:ok]
		command = sh -c 'echo x >> $T/ok; exit 2'
		exitcodes = 0,2
		[program:bad]
		command = sh -c 'echo x >> $T/bad; exit 1'
		startsecs = 0
	EOF
	run "$INIT" --config "$T/init.conf" -- sleep 2.5
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/ok")" -eq 1 ]
	# Exits after startsecs (0) restart after 1 s each.
	[ "$(wc -l <"$T/bad")" -ge 2 ]
}

@test "log files rotate exactly at their size, keeping N backups" {
	cat >"$T/init.conf" <<-EOF
		[program:talk]
		command = sh -c 'head -c 1000 /dev/zero | tr "\\\\0" a; echo oops >&2; echo done > $T/done; sleep 100'
		stdout_logfile = $T/talk.log
		stdout_logfile_maxbytes = 300
		stdout_logfile_backups = 2
		stderr_logfile = $T/talk.err
	EOF
	run "$INIT" --config "$T/init.conf" -- sh -c "while [ ! -s $T/done ]; do sleep 0.05; done; sleep 0.2"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/talk.log")" -eq 100 ]
	[ "$(stat -c %s "$T/talk.log.1")" -eq 300 ]
	[ "$(stat -c %s "$T/talk.log.2")" -eq 300 ]
	[ ! -e "$T/talk.log.3" ]
	[ "$(tr -d a <"$T/talk.log.1" | wc -c)" -eq 0 ]
	[ "$(cat "$T/talk.err")" = oops ]
}

@test "a service ignoring TERM is killed after --grace" {
	cat >"$T/init.conf" <<-EOF
		[program:stubborn]
		command = sh -c 'trap "" TERM; echo \$\$ > $T/ready; while :; do sleep 0.05; done'
	EOF
	start_bg host "$T/ready" --config "$T/init.conf" --grace 1
	svc=$(cat "$T/ready")
	start=$(date +%s%N)
	stop_bg TERM
	took=$((($(date +%s%N) - start) / 100000000))
	[ "$STATUS" -eq 0 ]
	echo "stopped in $took tenths of a second"
	((took >= 9 && took <= 25))
	run ! kill -0 "$svc"
	grep -Eq "grace period over, killing [0-9]+ leftover process" "$T/err"
}

@test "a main program ignoring TERM is killed after --grace (PID 1): 137" {
	start_bg pid1 "$T/ready" --grace 0.5 -- sh -c "trap '' TERM; echo ready > $T/ready; while :; do sleep 0.05; done"
	stop_bg TERM
	[ "$STATUS" -eq 137 ]
}

@test "a bad configuration: file:line, exit 2, nothing started" {
	cat >"$T/init.conf" <<-EOF
		[program:a]
		command = touch $T/started
		colour = blue
	EOF
	run --separate-stderr "$INIT" --config "$T/init.conf" -- touch "$T/main"
	[ "$status" -eq 2 ]
	[ "$stderr" = "brig-init: $T/init.conf:3: unknown key \`colour\` in [program:a]" ]
	sleep 0.2
	[ ! -e "$T/started" ]
	[ ! -e "$T/main" ]
}

@test "an unknown user, a missing config, a bad --grace: exit 2" {
	printf '[program:a]\ncommand = true\nuser = no-such-user\n' >"$T/init.conf"
	run --separate-stderr "$INIT" --config "$T/init.conf" -- true
	[ "$status" -eq 2 ]
	[ "$stderr" = "brig-init: $T/init.conf: [program:a]: user \`no-such-user\` not found in /etc/passwd" ]
	run --separate-stderr "$INIT" --config "$T/missing.conf" -- true
	[ "$status" -eq 2 ]
	[ "$stderr" = "brig-init: $T/missing.conf: No such file or directory" ]
	run --separate-stderr "$INIT" --grace soon -- true
	[ "$status" -eq 2 ]
	[ "$stderr" = "brig-init: --grace: \`soon\` is not a number of seconds" ]
}
