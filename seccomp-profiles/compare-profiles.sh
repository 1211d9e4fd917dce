#!/bin/sh
# Compares default.json and sandbox.json with the intent of the usual
# container default profile (the one container engines ship), entry by
# entry, and fails on any difference that seccomp-profiles/README.md does
# not explain. The lists below are the facts compared; README.md says why.
#
#   seccomp-profiles/compare-profiles.sh    # needs jq
set -u
here=$(cd "$(dirname "$0")" && pwd)
DEFAULT=$here/default.json
SANDBOX=$here/sandbox.json
bad=0
checks=0

# Refused by the usual default in a container without extra capabilities:
# neither profile may allow them unconditionally.
USUAL_REFUSED="acct add_key bpf clock_settime clock_settime64 create_module delete_module
	fanotify_init finit_module fsconfig fsmount fsopen fspick get_kernel_syms init_module
	ioperm iopl kexec_file_load kexec_load keyctl lookup_dcookie mbind mount mount_setattr
	move_mount nfsservctl open_by_handle_at open_tree perf_event_open pivot_root
	query_module quotactl quotactl_fd reboot request_key set_mempolicy
	set_mempolicy_home_node setdomainname sethostname setns settimeofday stime swapoff
	swapon _sysctl sysfs syslog umount umount2 unshare uselib userfaultfd ustat vhangup
	vm86 vm86old"

# Allowed by the usual default, refused by both profiles here (README.md:
# "Differences from the usual default").
REFUSED_HERE="clock_adjtime clock_adjtime64 name_to_handle_at io_uring_setup io_uring_enter
	io_uring_register epoll_ctl_old epoll_wait_old"

# Allowed by the usual default only with a capability; default.json lets
# them reach the kernel, whose own checks are exact; sandbox.json refuses.
KERNEL_DECIDES="chroot kcmp pidfd_getfd process_madvise ptrace process_vm_readv
	process_vm_writev get_mempolicy"

# allowed FILE NAME: NAME is in an ALLOW rule without conditions.
allowed() {
	jq -e --arg n "$2" 'any(.syscalls[]; .action == "SCMP_ACT_ALLOW"
		and (.names | index($n)) and ((.args // []) | length) == 0)' "$1" >/dev/null
}

check() {
	checks=$((checks + 1))
	if [ "$1" = ok ]; then
		echo "ok   $2"
	else
		echo "DIFF $2"
		bad=$((bad + 1))
	fi
}

for n in $USUAL_REFUSED; do
	for f in "$DEFAULT" "$SANDBOX"; do
		if allowed "$f" "$n"; then r="diff"; else r="ok"; fi
		check "$r" "$(basename "$f"): $n refused, as by the usual default"
	done
done
for n in $REFUSED_HERE; do
	if allowed "$DEFAULT" "$n"; then r="diff"; else r="ok"; fi
	check "$r" "default.json: $n refused (allowed by the usual default; see README.md)"
done
for n in $KERNEL_DECIDES; do
	if allowed "$DEFAULT" "$n"; then r="ok"; else r="diff"; fi
	check "$r" "default.json: $n left to the kernel's checks"
	if allowed "$SANDBOX" "$n" && [ "$n" != get_mempolicy ]; then r="diff"; else r="ok"; fi
	check "$r" "sandbox.json: $n refused"
done

# The sandbox allows nothing that the default refuses.
extra=$(jq -r -n --slurpfile d "$DEFAULT" --slurpfile s "$SANDBOX" '
	def plain(p): [p.syscalls[] | select(.action == "SCMP_ACT_ALLOW" and ((.args // []) | length) == 0) | .names[]] | unique;
	plain($s[0]) - plain($d[0]) | join(" ")')
if [ -z "$extra" ]; then r="ok"; else r="diff"; fi
check "$r" "sandbox.json allows nothing default.json refuses${extra:+: $extra}"

# Both defaults deny with EPERM.
for f in "$DEFAULT" "$SANDBOX"; do
	if jq -e '.defaultAction == "SCMP_ACT_ERRNO" and .defaultErrnoRet == 1' "$f" >/dev/null; then r="ok"; else r="diff"; fi
	check "$r" "$(basename "$f"): everything else fails with EPERM"
done

# The conditional rules of the usual default, kept.
for f in "$DEFAULT" "$SANDBOX"; do
	if jq -e 'any(.syscalls[]; .names == ["clone"] and .action == "SCMP_ACT_ALLOW"
		and .args == [{index: 0, value: 2114060288, op: "SCMP_CMP_MASKED_EQ", valueTwo: 0}])' "$f" >/dev/null; then r="ok"; else r="diff"; fi
	check "$r" "$(basename "$f"): clone without namespace flags (mask 0x7E020000)"
	if jq -e 'any(.syscalls[]; .names == ["clone3"] and .action == "SCMP_ACT_ERRNO" and .errnoRet == 38)' "$f" >/dev/null; then r="ok"; else r="diff"; fi
	check "$r" "$(basename "$f"): clone3 fails with ENOSYS"
done
personas() {
	jq -c '[.syscalls[] | select(.names == ["personality"]) | .args[] | .value] | sort' "$1"
}
if [ "$(personas "$DEFAULT")" = "[0,8,131072,131080,4294967295]" ]; then r="ok"; else r="diff"; fi
check "$r" "default.json: personality 0, PER_LINUX32, UNAME26, both, and the query"
if [ "$(personas "$SANDBOX")" = "[0,4294967295]" ]; then r="ok"; else r="diff"; fi
check "$r" "sandbox.json: personality 0 and the query only"
if jq -e '[.syscalls[] | select(.names == ["socket"])] | length > 0 and all(.[]; .action == "SCMP_ACT_ALLOW" and all(.args[]; .op != "SCMP_CMP_NE"))' "$DEFAULT" >/dev/null \
	&& ! jq -e 'any(.syscalls[] | select(.names == ["socket"]) | .args[]; .index == 0 and .value == 40 and .op == "SCMP_CMP_EQ")' "$DEFAULT" >/dev/null; then r="ok"; else r="diff"; fi
check "$r" "default.json: socket of every family but AF_VSOCK, written as what is allowed"

echo "$checks checks, $bad differences not explained"
[ "$bad" -eq 0 ]
