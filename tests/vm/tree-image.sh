#!/bin/sh
# Prints the path of an ext4 image of the sandbox tree, made (or remade
# when the tree is newer) in the VM cache. The test VM's root is 9p under
# an overlay, which can't be id-mapped: the machine mounts this image over
# the tree (tests/vm/with-tree.sh), so that sandboxes there get their own
# user namespace as on a host. mke2fs -d copies the tree without mounting
# anything; ~2 s for the small tree.
#
#   tests/vm/tree-image.sh [TREE]     # default /var/lib/brig/rootfs
set -eu
tree=${1:-/var/lib/brig/rootfs}
cache=${BRIG_VM_CACHE:-/var/cache/brig-vm}
image=$cache/sandbox-tree.img
[ -d "$tree/usr/bin" ] || { echo "tree-image: no sandbox tree at $tree (make rootfs)" >&2; exit 1; }
mkdir -p "$cache"
# Remade when anything in the tree changed after the image (or the tree's
# own path did: the image records it beside itself).
if [ -f "$image" ] && [ "$(cat "$image.src" 2>/dev/null)" = "$tree" ] &&
	[ -z "$(find "$tree" -newer "$image" -print -quit)" ]; then
	echo "$image"
	exit 0
fi
kib=$(du -sk "$tree" | cut -f1)
size=$((kib + kib / 4 + 65536))
rm -f "$image.tmp"
truncate -s "${size}K" "$image.tmp"
PATH=$PATH:/sbin:/usr/sbin mkfs.ext4 -q -F -d "$tree" -L brig-tree "$image.tmp"
mv "$image.tmp" "$image"
echo "$tree" >"$image.src"
echo "$image"
