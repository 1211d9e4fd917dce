#!/bin/sh
# Builds a sandbox root filesystem: a Debian 12 tree (debootstrap minbase +
# rootfs/packages.txt, + rootfs/packages-PROFILE.txt for a profile other
# than `small`) with the non-root user `sandbox` (1000:1000) and an empty
# /mnt/data, shared read-only by every sandbox.
#
#   rootfs/build.sh [--image] [--profile small|full] [DIR]
#
# PROFILE (or --profile) picks the package lists: `small` (the default)
# builds into $ROOTFS_DIR or /var/lib/brig/rootfs, `full` (the data stack,
# compilers and runtimes of packages-full.txt) into /var/lib/brig/rootfs-full.
# Incremental: DIR/etc/brig/rootfs.stamp holds a hash of the lists and of
# the build scripts; when it matches, nothing is done. Otherwise the tree is
# built next to DIR and renamed into place, so DIR is never half-built.
# --image also writes DIR.squashfs (rebuilt only when the tree was).
# BRIG_ROOTFS_MIRROR overrides the mirror read from the apt sources.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
suite=bookworm
image=no
profile=${PROFILE:-small}
usage="usage: rootfs/build.sh [--image] [--profile small|full] [DIR]"
while [ $# -gt 0 ]; do
	case $1 in
	--image) image=yes ;;
	--profile)
		[ $# -ge 2 ] || {
			echo "rootfs: --profile needs a name ($usage)" >&2
			exit 2
		}
		profile=$2
		shift
		;;
	-h | --help)
		sed -n '2,17s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*)
		echo "rootfs: unknown option $1 ($usage)" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
case $profile in
small)
	extra=""
	default_dest=${ROOTFS_DIR:-/var/lib/brig/rootfs}
	;;
*)
	extra=$here/packages-$profile.txt
	if [ -z "$profile" ] || [ "${profile#*/}" != "$profile" ] || [ ! -f "$extra" ]; then
		echo "rootfs: unknown profile \`$profile' (no rootfs/packages-$profile.txt)" >&2
		exit 2
	fi
	default_dest=${ROOTFS_DIR:-/var/lib/brig/rootfs-$profile}
	;;
esac
dest=${1:-$default_dest}
case $dest in
/*) ;;
*) dest=$(pwd)/$dest ;;
esac
dest=${dest%/}

stamp_of_sources() {
	cat "$here/packages.txt" ${extra:+"$extra"} "$here/build.sh" "$here/mirror.sh" "$here/jemalloc.sh" |
		sha256sum | cut -d' ' -f1
}
want=$(stamp_of_sources)

make_image() {
	[ "$image" = yes ] || return 0
	if [ -f "$dest.squashfs" ] && [ -n "$(find "$dest.squashfs" -newer "$dest/etc/brig/rootfs.stamp")" ]; then
		return 0
	fi
	command -v mksquashfs >/dev/null || {
		echo "rootfs: --image needs mksquashfs (apt-get install squashfs-tools)" >&2
		exit 1
	}
	rm -f "$dest.squashfs.new"
	# Fixed timestamps and order keep the image identical across rebuilds of
	# the same tree.
	mksquashfs "$dest" "$dest.squashfs.new" -noappend -quiet -comp zstd \
		-mkfs-time 0 -all-time 0 >/dev/null
	mv -f "$dest.squashfs.new" "$dest.squashfs"
	echo "rootfs: image $dest.squashfs"
}

if [ -f "$dest/etc/brig/rootfs.stamp" ] && [ "$(cat "$dest/etc/brig/rootfs.stamp")" = "$want" ]; then
	echo "rootfs: $dest is up to date"
	make_image
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "rootfs: building $dest needs root (debootstrap, chroot)" >&2
	exit 1
fi
command -v debootstrap >/dev/null || {
	echo "rootfs: debootstrap not found (apt-get install debootstrap)" >&2
	exit 1
}

mirror=${BRIG_ROOTFS_MIRROR:-$("$here/mirror.sh" "$suite")}
# list FILE...: the package names of the lists, comments dropped.
list() {
	sed -e 's/#.*//' "$@" | tr -s ' \t\n' '\n' | grep -v '^$' | sort -u
}
packages=$(list "$here/packages.txt" | paste -sd, -)

parent=$(dirname "$dest")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.rootfs-new.XXXXXX")
old=""
cleanup() {
	# debootstrap leaves /proc and /sys mounted when it fails half-way.
	for m in proc sys dev/pts dev; do
		umount -l "$tmp/$m" 2>/dev/null || true
	done
	rm -rf "$tmp"
	[ -z "$old" ] || rm -rf "$old"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "rootfs: debootstrap $suite from $mirror into $dest ($packages)"
debootstrap --variant=minbase --components=main --include="$packages" \
	"$suite" "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
	tail -n 20 "$tmp.log" >&2
	rm -f "$tmp.log"
	echo "rootfs: debootstrap failed" >&2
	exit 1
}
rm -f "$tmp.log"

# PHP loads its extensions with RTLD_DEEPBIND, which binds them to glibc's
# malloc while PHP itself allocates from the preloaded jemalloc, and it
# crashes on the first extension. Each PHP binary is diverted and run
# through a wrapper that drops the preload; every other program keeps it.
without_preload() {
	for bin in "$tmp"/usr/bin/php[0-9]*; do
		if [ ! -f "$bin" ] || [ -L "$bin" ]; then continue; fi
		case $bin in *.distrib) continue ;; esac
		name=/usr/bin/$(basename "$bin")
		chroot "$tmp" dpkg-divert --quiet --rename --divert "$name.distrib" --add "$name"
		printf '#!/bin/sh\n# %s\nunset LD_PRELOAD\nexec %s.distrib "$@"\n' \
			"brig: PHP runs without the preloaded jemalloc (rootfs/build.sh)" "$name" >"$bin"
		chmod 0755 "$bin"
	done
}

# A profile's own packages go in with apt inside the new tree: its
# dependency solver handles the alternatives and virtual packages of a
# large set, which debootstrap's does not. No service is started
# (policy-rc.d), no recommends are pulled in.
if [ -n "$extra" ]; then
	echo "rootfs: apt-get install the packages of $(basename "$extra")"
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/usr/sbin/policy-rc.d"
	own_resolv=no
	if [ ! -s "$tmp/etc/resolv.conf" ]; then
		cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
		own_resolv=yes
	fi
	mount -t proc proc "$tmp/proc"
	# shellcheck disable=SC2046 # one word per package
	if ! chroot "$tmp" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
		sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' \
		apt $(list "$extra") >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		rm -f "$tmp.log"
		echo "rootfs: apt-get install failed" >&2
		exit 1
	fi
	rm -f "$tmp.log"
	umount "$tmp/proc"
	chroot "$tmp" apt-get clean
	rm -f "$tmp/usr/sbin/policy-rc.d"
	without_preload
	[ "$own_resolv" = no ] || rm -f "$tmp/etc/resolv.conf"
fi

# The user every sandbox process runs as. Fixed ids: the profile and the
# owner of each bundle's /mnt/data rely on them.
chroot "$tmp" groupadd --gid 1000 sandbox
chroot "$tmp" useradd --uid 1000 --gid 1000 --home-dir /home/sandbox \
	--create-home --shell /bin/bash --comment "brig sandbox" sandbox

install -d -m 0755 -o 1000 -g 1000 "$tmp/mnt/data"
install -d -m 0755 "$tmp/etc/brig"

jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -e "$tmp$jemalloc" ] || jemalloc=$(chroot "$tmp" dpkg -L libjemalloc2 | grep '/libjemalloc\.so\.2$' | head -n 1)
if [ -z "$jemalloc" ] || [ ! -e "$tmp$jemalloc" ]; then
	echo "rootfs: libjemalloc.so.2 not found in the new tree" >&2
	exit 1
fi
echo "$jemalloc" >"$tmp/etc/brig/jemalloc-path"
# Debian's jemalloc brings libstdc++ into every process that preloads it;
# rootfs/jemalloc.sh puts a build without the C++ operators in its place.
# Where it can't (no source on the mirror, no compiler), Debian's stays.
echo "rootfs: jemalloc without its C++ operators, from Debian's source"
if ! "$here/jemalloc.sh" "$tmp" "$mirror" "$suite" >/dev/null; then
	echo "rootfs: Debian's own jemalloc stays in the tree" >&2
fi

cat >"$tmp/etc/brig/init.conf" <<'CONF'
# brig-init configuration (see brig-init(8)). The sandbox profile lists
# its services as [program:NAME] sections; by default there are none.
CONF

# Where the host's brig-init is bind-mounted: a bind mount needs an
# existing file, and the tree is read-only at run time.
install -m 0755 /dev/null "$tmp/usr/sbin/brig-init"

# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
chroot "$tmp" dpkg-query -W -f '${Package} ${Version} ${Architecture}\n' |
	sort >"$tmp/etc/brig/packages.installed"

# Caches and logs of the build have no use in a read-only tree; an empty
# machine-id is what systemd-less containers expect.
rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/cache/apt/*.bin \
	"$tmp"/var/lib/apt/lists/* "$tmp"/var/log/* "$tmp"/var/cache/debconf/*-old \
	"$tmp"/tmp/* "$tmp"/var/tmp/*
: >"$tmp/etc/machine-id"
chmod 0755 "$tmp"

echo "$want" >"$tmp/etc/brig/rootfs.stamp"
if [ -e "$dest" ]; then
	old=$(mktemp -d "$parent/.rootfs-old.XXXXXX")
	mv "$dest" "$old/tree"
fi
mv "$tmp" "$dest"
echo "rootfs: built $dest"
make_image
