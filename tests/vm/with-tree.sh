#!/bin/sh
# Runs in the test VM: mounts the ext4 image of the sandbox tree
# (tests/vm/tree-image.sh, named by $BRIG_VM_TREE_IMAGE) read-only over
# the tree's path, then runs the command. Without the variable, the
# command runs as it is.
#
#   with-tree.sh COMMAND [ARGS...]
set -eu
if [ -n "${BRIG_VM_TREE_IMAGE:-}" ]; then
	tree=$(cat "$BRIG_VM_TREE_IMAGE.src")
	mount -o ro,loop,noload "$BRIG_VM_TREE_IMAGE" "$tree" || {
		echo "with-tree: mount $BRIG_VM_TREE_IMAGE on $tree failed" >&2
		exit 1
	}
fi
exec "$@"
