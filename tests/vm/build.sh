#!/bin/sh
# Builds what tests/vm/run.sh boots: an uncompressed kernel (or the bzImage
# when it cannot be unpacked) and a small busybox initramfs holding only the
# modules needed to reach the host's root over 9p. Everything goes into the
# cache directory; a stamp (a hash of the kernel package version and of these
# scripts) makes a second call with nothing changed a no-op.
#
#   tests/vm/build.sh [--force]
#
# Environment: BRIG_VM_CACHE (default /var/cache/brig-vm), BRIG_VM_KVER (a
# kernel release under /lib/modules; default: the one linux-image-amd64 pulls).
# Prints the kernel release it built for on stdout.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${BRIG_VM_CACHE:-/var/cache/brig-vm}
force=0
[ "${1:-}" = "--force" ] && force=1

die() {
	echo "build.sh: $*" >&2
	exit 1
}

# The kernel release that the linux-image-amd64 metapackage depends on, so an
# upgrade of the metapackage moves the VM to the new kernel.
kernel_release() {
	if [ -n "${BRIG_VM_KVER:-}" ]; then
		echo "$BRIG_VM_KVER"
		return
	fi
	dpkg-query -W -f='${Depends}\n' linux-image-amd64 2>/dev/null |
		tr ',' '\n' | sed -n 's/^ *linux-image-\([^ ]*\).*/\1/p' | head -1
}

kver=$(kernel_release)
[ -n "$kver" ] || die "no kernel: install linux-image-amd64 or set BRIG_VM_KVER"
vmlinuz=/boot/vmlinuz-$kver
moddir=/lib/modules/$kver
[ -r "$vmlinuz" ] || die "$vmlinuz is missing"
[ -r "$moddir/modules.dep" ] || die "$moddir/modules.dep is missing"
[ -x /bin/busybox ] || die "/bin/busybox is missing (busybox-static)"

pkgver=$(dpkg-query -W -f='${Version}' "linux-image-$kver" 2>/dev/null || true)
bbver=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true)
stamp=$(
	{
		echo "$kver $pkgver $bbver"
		cat "$here/build.sh" "$here/init" "$here/stage2"
	} | sha256sum | cut -d' ' -f1
)

if [ "$force" -eq 0 ] && [ -f "$cache/stamp" ] &&
	[ "$(cat "$cache/stamp")" = "$stamp" ]; then
	echo "$kver"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- kernel -----------------------------------------------------------------
# A bzImage is a small decompressor followed by the compressed vmlinux. Under
# TCG that decompressor takes seconds, while qemu can load an ELF vmlinux
# directly through its PVH entry note. So look for each compression magic the
# kernel may use, try to unpack from there, and keep the first result that is
# an ELF file. Trailing bytes after the payload make the decompressors
# complain; what counts is the output.
elf_magic() {
	[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]
}

try_unpack() { # offset command...
	off=$1
	shift
	tail -c "+$((off + 1))" "$vmlinuz" | "$@" >"$tmp/vmlinux" 2>/dev/null || true
	[ -s "$tmp/vmlinux" ] && elf_magic "$tmp/vmlinux"
}

extract_vmlinux() {
	# magic (as grep -P escapes)   decompressor
	for entry in \
		'\xfd\x37\x7a\x58\x5a\x00|xz -dc' \
		'\x28\xb5\x2f\xfd|zstd -dcq' \
		'\x1f\x8b\x08|gzip -dc' \
		'\x02\x21\x4c\x18|lz4 -dc' \
		'\x5d\x00\x00\x00|xz -dc --format=lzma' \
		'\x42\x5a\x68|bzip2 -dc'; do
		magic=${entry%%|*}
		cmd=${entry#*|}
		command -v "${cmd%% *}" >/dev/null 2>&1 || continue
		for off in $(LC_ALL=C grep -obUaP "$magic" "$vmlinuz" 2>/dev/null |
			cut -d: -f1 | head -8); do
			# shellcheck disable=SC2086 # cmd is a command and its flags
			if try_unpack "$off" $cmd; then
				return 0
			fi
		done
	done
	return 1
}

# qemu refuses an ELF kernel without the PVH note, so only unpack kernels
# built with it.
if grep -q '^CONFIG_PVH=y' "/boot/config-$kver" 2>/dev/null && extract_vmlinux; then
	kernel=vmlinux
else
	echo "build.sh: could not unpack $vmlinuz; booting the bzImage (slower)" >&2
	cp "$vmlinuz" "$tmp/vmlinux"
	kernel=bzImage
fi

# --- initramfs --------------------------------------------------------------
root=$tmp/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/lower" \
	"$root/newroot" "$root/rw" "$root/lib/modules/$kver"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$here/init" "$root/init"
cp "$here/stage2" "$root/stage2"
chmod 755 "$root/init" "$root/stage2"

# Modules in load order: each one after everything it depends on. Some of
# them may be built in on other kernels; those have no .ko and are skipped.
wanted="virtio_pci virtio_console 9pnet_virtio 9p overlay"
order=$root/modules.load
: >"$order"
add_module() { # path relative to $moddir
	grep -qxF "$1" "$order" && return 0
	for dep in $(sed -n "s|^$1: *||p" "$moddir/modules.dep"); do
		add_module "$dep"
	done
	echo "$1" >>"$order"
}
for name in $wanted; do
	path=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$moddir/modules.dep" | head -1 | cut -d: -f1)
	if [ -z "$path" ]; then
		grep -qE "(^|/)$name\.ko" "$moddir/modules.builtin" 2>/dev/null ||
			die "module $name is neither in $moddir/modules.dep nor built in"
		continue
	fi
	add_module "$path"
done
while read -r path; do
	dst=$root/lib/modules/$kver/$path
	mkdir -p "$(dirname "$dst")"
	# busybox insmod reads plain .ko files only.
	case $path in
	*.ko.xz) xz -dc "$moddir/$path" >"${dst%.xz}" ;;
	*.ko.zst) zstd -dcq "$moddir/$path" >"${dst%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$path" >"${dst%.gz}" ;;
	*) cp "$moddir/$path" "$dst" ;;
	esac
done <"$order"
sed -i 's/\.ko\.[a-z]*$/.ko/' "$order"
echo "$kver" >"$root/kver"

# Uncompressed: unpacking is cheaper than decompressing under TCG.
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$tmp/initramfs.cpio"

echo "$kernel" >"$tmp/kernel-type"
echo "$kver" >"$tmp/kver"
mv -f "$tmp/vmlinux" "$cache/vmlinux"
mv -f "$tmp/initramfs.cpio" "$cache/initramfs.cpio"
mv -f "$tmp/kernel-type" "$cache/kernel-type"
mv -f "$tmp/kver" "$cache/kver"
echo "$stamp" >"$cache/stamp"
echo "$kver"
