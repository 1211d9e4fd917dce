#!/bin/sh
# Runs one command in a throwaway qemu machine that is a pure cgroup v2 host:
# Debian's kernel, the host's root shared read-only over 9p under a tmpfs
# overlay, the working tree shared read-write at its own path, every
# controller enabled at the cgroup root. Exits with the command's status;
# its stdout and stderr stream to ours. With --systemd, the host's systemd
# boots as PID 1 (and manages the cgroups) and runs the command as a
# service once the system bus is up. See tests/vm/README.md.
#
#   tests/vm/run.sh [--systemd] [-e NAME=VALUE]... [--share DIR]... \
#                   [--mem 2G] [--cpus 2] [--] COMMAND [ARGS...]
#
# Exit status: the command's, or 125 when the machine could not run it.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${BRIG_VM_CACHE:-/var/cache/brig-vm}
mem=${BRIG_VM_MEM:-2G}
cpus=${BRIG_VM_CPUS:-2}
timeout=${BRIG_VM_TIMEOUT:-0}
debug=${BRIG_VM_DEBUG:-0}
systemd=${BRIG_VM_SYSTEMD:-0}

die() {
	echo "run.sh: $*" >&2
	exit 125
}

usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 125
}

# Single-quote a word for the guest's /bin/sh.
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# qemu option values use "," as a separator; a literal one is doubled.
qarg() {
	printf '%s' "$1" | sed 's/,/,,/g'
}

envs=""
shares=""
while [ "$#" -gt 0 ]; do
	case $1 in
	-e)
		[ "$#" -ge 2 ] || usage
		case $2 in
		[A-Za-z_]*=*) ;;
		*) die "-e wants NAME=VALUE, not '$2'" ;;
		esac
		envs="$envs $(quote "$2")"
		shift 2
		;;
	--share)
		[ "$#" -ge 2 ] || usage
		[ -d "$2" ] || die "--share $2: not a directory"
		shares="$shares
$(cd "$2" && pwd -P)"
		shift 2
		;;
	--mem)
		[ "$#" -ge 2 ] || usage
		mem=$2
		shift 2
		;;
	--cpus)
		[ "$#" -ge 2 ] || usage
		cpus=$2
		shift 2
		;;
	--systemd)
		systemd=1
		shift
		;;
	-h | --help) usage ;;
	--)
		shift
		break
		;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ "$#" -gt 0 ] || usage
[ -n "$shares" ] || shares=$(cd "$top" && pwd -P)
[ "$(id -u)" -eq 0 ] || die "must run as root (qemu writes the shared tree as root; first runs install packages)"

# --- packages ---------------------------------------------------------------
installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}
need=""
pkgs="qemu-system-x86 linux-image-amd64 busybox-static cpio xz-utils zstd coreutils"
# The machine boots the host's systemd and system bus.
[ "$systemd" = 1 ] && pkgs="$pkgs systemd dbus"
for pkg in $pkgs; do
	installed "$pkg" || need="$need $pkg"
done
if [ -n "$need" ]; then
	echo "run.sh: installing$need" >&2
	export DEBIAN_FRONTEND=noninteractive
	# Boots may start at once (tests/check-integration.sh runs two lanes):
	# one installs at a time, the other waits and finds the packages in.
	# apt's own timeout waits for dpkg's lock, not for the lists' lock that
	# `apt-get update` takes (a fresh CI machine's second lane failed on
	# it); the flock covers both.
	mkdir -p "$cache" || die "cannot create $cache"
	lock="-o DPkg::Lock::Timeout=600"
	# shellcheck disable=SC2086 # a list of package names, and the option
	{
		flock -w 1800 9 || die "waited 30 minutes for another boot's install of$need"
		apt-get update -qq $lock && apt-get install -y -qq $lock --no-install-recommends $need
	} 9>"$cache/.install.lock" >&2 || die "could not install$need"
fi

# --- kernel and initramfs -----------------------------------------------------
mkdir -p "$cache" || die "cannot create $cache"
(
	# Concurrent first runs would build into the same cache.
	flock 9 || exit 1
	"$here/build.sh" >/dev/null
) 9>"$cache/lock" || die "building the VM image in $cache failed"
kernel=$cache/vmlinux
initrd=$cache/initramfs.cpio

# --- this run's files -----------------------------------------------------------
# The guest reads the run's files through the shared host root, at a path
# given on the kernel command line: no blanks in it.
run=$(mktemp -d "${TMPDIR:-/tmp}/brig-vm.XXXXXX") || die "mktemp failed"
case $run in
*[[:space:]]*)
	rm -rf "$run"
	die "TMPDIR must not contain blanks ($run)"
	;;
esac
qpid=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$run/ctl"
: >"$run/out"
: >"$run/err"
: >"$run/status"
: >"$run/console"

# The command, as a script for the guest's /bin/sh: the caller's working
# directory, a clean environment, the argv exactly as given.
cwd=$(pwd -P)
first_share=$(echo "$shares" | sed -n '/./{p;q;}')
{
	echo "cd $(quote "$cwd") 2>/dev/null || {"
	echo "  echo $(quote "run.sh: $cwd does not exist in the VM; running in $first_share") >&2"
	echo "  cd $(quote "$first_share") || exit 125"
	echo "}"
	printf 'exec /usr/bin/env -i %s %s %s' "$(quote "PATH=$PATH")" \
		"$(quote HOME=/root)" "$(quote TERM=dumb)"
	[ -n "${CI+set}" ] && printf ' %s' "$(quote "CI=$CI")"
	[ -n "${BRIG+set}" ] && printf ' %s' "$(quote "BRIG=$BRIG")"
	# The sandbox's lxcfs in the guest's own /run: the default directory
	# is under the host's /var/lib/brig, which the guest reads through 9p,
	# so a lxcfs mounted there on the host (and dead, if it was killed) is
	# in the way, and not the guest's to detach.
	printf ' %s' "$(quote BRIG_LXCFS_DIR=/run/brig-lxcfs)"
	printf '%s' "$envs"
	for arg in "$@"; do
		printf ' %s' "$(quote "$arg")"
	done
	echo
} >"$run/ctl/cmd"

set -- -nodefaults -no-user-config -display none -vga none -no-reboot \
	-accel tcg -machine pc -cpu max -m "$mem" -smp "$cpus" \
	-kernel "$kernel" -initrd "$initrd" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-device virtio-serial-pci,ioeventfd=off
# ioeventfd=off: the guest's writes to the ports are then handled before its
# write() returns, so nothing the command printed can still be in flight
# when the exit status arrives and the machine resets.
for name in out err status; do
	set -- "$@" -chardev "file,id=$name,path=$(qarg "$run/$name")" \
		-device "virtserialport,chardev=$name,name=$name"
done
n=0
echo "$shares" | while read -r dir; do
	[ -n "$dir" ] && echo "share$n $dir" && n=$((n + 1))
done >"$run/ctl/shares"
while read -r tag dir; do
	set -- "$@" -virtfs "local,path=$(qarg "$dir"),mount_tag=$tag,security_model=passthrough,multidevs=remap"
done <"$run/ctl/shares"
append="panic=-1 mitigations=off pci=noacpi rdinit=/init brig.run=$run/ctl"
if [ "$systemd" = 1 ]; then
	# stage2 writes brig-vm.target and execs systemd.
	append="$append brig.systemd=1 systemd.unit=brig-vm.target systemd.unified_cgroup_hierarchy=1"
	[ "$debug" = 1 ] || append="$append systemd.show_status=0"
fi
append="$append ${BRIG_VM_APPEND:-}"
if [ "$debug" = 1 ]; then
	append="$append console=ttyS0 brig.debug=1"
	set -- "$@" -chardev "file,id=con,path=$(qarg "$run/console")" -serial chardev:con
else
	append="$append quiet loglevel=0"
fi
[ -f /usr/share/qemu/qboot.rom ] && set -- "$@" -bios /usr/share/qemu/qboot.rom

# qemu writes the ports into files; tail streams them to us while it runs and
# drains them once it has exited.
if [ "$timeout" != 0 ]; then
	timeout -s KILL "$timeout" qemu-system-x86_64 "$@" -append "$append" </dev/null &
else
	qemu-system-x86_64 "$@" -append "$append" </dev/null &
fi
qpid=$!
tail -c +1 -s 0.1 -f --pid="$qpid" "$run/out" &
tout=$!
tail -c +1 -s 0.1 -f --pid="$qpid" "$run/err" >&2 &
terr=$!
if [ "$debug" = 1 ]; then
	tail -c +1 -s 0.1 -f --pid="$qpid" "$run/console" >&2 &
fi
wait "$qpid"
qrc=$?
qpid=""
wait "$tout" "$terr"

rc=$(tr -dc 0-9 <"$run/status")
if [ -z "$rc" ]; then
	if [ "$timeout" != 0 ] && [ "$qrc" -eq 137 ]; then
		die "the VM was killed after BRIG_VM_TIMEOUT=$timeout seconds"
	fi
	if [ "$qrc" -ne 0 ]; then
		die "qemu failed (status $qrc)"
	fi
	die "the VM stopped without an exit status (BRIG_VM_DEBUG=1 shows its console)"
fi
exit "$rc"
