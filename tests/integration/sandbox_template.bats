#!/usr/bin/env bats
# shellcheck disable=SC2016 # shell programs run inside the sandbox
# `brig sandbox template`: sandboxes from image archives, as a user makes
# them (podman save, docker-archive and oci-archive) and as a hostile
# archive tries to write outside the store. The store is the file's own
# ($BRIG_TEMPLATE_DIR). Needs podman (for the images it saves: built
# with `podman import` from the small tree, `make rootfs`, in a storage of
# the file's own), python3 (tests/integration/template-image.py writes the
# other archives), brig-unpack and brig-init beside $BRIG, and what
# sandbox.bats needs to start a sandbox.

load helpers

ROOTFS_TREE=${BRIG_SANDBOX_ROOTFS:-/var/lib/brig/rootfs}
IMAGE_PY=$BATS_TEST_DIRNAME/template-image.py

# podman on a storage of the file's own: nothing of the host's images.
tpl_podman() {
	podman --root "$BATS_FILE_TMPDIR/podman" --runroot "$BATS_FILE_TMPDIR/podman-run" \
		--storage-driver vfs "$@"
}

setup_file() {
	sandbox_file_env
	export BRIG_TEMPLATE_DIR=$BATS_FILE_TMPDIR/templates
	export BRIG_UNPACK
	BRIG_UNPACK=${BRIG_UNPACK:-$(dirname "$BRIG")/brig-unpack}
	export IMAGES=$BATS_FILE_TMPDIR/images
	mkdir -p "$IMAGES"
	# The small tree as an image with an Env and a WorkingDir, saved both
	# ways podman saves.
	if [ -d "$ROOTFS_TREE/usr/bin" ] && command -v podman >/dev/null; then
		{
			tar -C "$ROOTFS_TREE" -cf "$IMAGES/rootfs.tar" . &&
				tpl_podman import --change 'ENV FOO=bar' --change 'WORKDIR /srv' \
					"$IMAGES/rootfs.tar" localhost/brig-template-test:1 &&
				tpl_podman save -o "$IMAGES/podman-docker.tar" localhost/brig-template-test:1 &&
				tpl_podman save --format oci-archive -o "$IMAGES/podman-oci.tar" \
					localhost/brig-template-test:1
		} >"$IMAGES/podman.out" 2>&1 || true
		rm -f "$IMAGES/rootfs.tar"
		tpl_podman rmi -a >/dev/null 2>&1 || true
	fi
	for kind in layers busybox dotdot through-symlink climb hardlink-out bad-digest \
		bad-diff-id bad-config; do
		python3 "$IMAGE_PY" "$kind" "$IMAGES/$kind.tar"
	done
}

teardown_file() {
	[ -n "${SB_ROOT:-}" ] || return 0
	for id in tp1 tp2 tb1 trm; do
		"$BRIG" --root "$SB_ROOT" sandbox rm "$id" >/dev/null 2>&1 || true
	done
	# The image went at setup; its storage is the file's alone (not
	# `system reset`, which would touch the host's networks too).
	tpl_podman rmi -a -f >/dev/null 2>&1 || true
	rm -rf "$BATS_FILE_TMPDIR/podman" "$BATS_FILE_TMPDIR/podman-run"
	stop_file_proxies
}

setup() {
	[ -x "$BRIG_UNPACK" ] || fail "no brig-unpack at $BRIG_UNPACK: build it or set BRIG_UNPACK"
}

# The store holds no name, tree or temp dir but the ones given (names).
store_has_only() {
	local want="$*" got
	got=$(find "$BRIG_TEMPLATE_DIR/names" -mindepth 1 -printf '%f\n' 2>/dev/null | sort | xargs)
	[ "$got" = "$want" ] || fail "names in the store: '$got', want '$want'"
	[ -z "$(ls -A "$BRIG_TEMPLATE_DIR/tmp" 2>/dev/null)" ] ||
		fail "temp dirs left: $(ls -A "$BRIG_TEMPLATE_DIR/tmp")"
}

# tree NAME: the host path of the template's tree.
tree() {
	echo "$BRIG_TEMPLATE_DIR/trees/$(sed -n 's/^digest=//p' "$BRIG_TEMPLATE_DIR/names/$1")"
}

# create_from TEMPLATE ID: a sandbox made from the template, or the test
# fails with what create said.
create_from() {
	run timeout 120 "$BRIG" --root "$SB_ROOT" sandbox create --template "$1" "$2"
	[ "$status" -eq 0 ] || fail "create --template $1 $2: $output"
}

require_sandbox_host() {
	[ -d "$ROOTFS_TREE/usr/bin" ] || fail "no sandbox tree at $ROOTFS_TREE: run \`make rootfs\`"
	[ -x "$BRIG_INIT" ] || fail "no brig-init at $BRIG_INIT: build it or set BRIG_INIT"
}

@test "template import: a multi-layer image unpacks with whiteouts, an opaque dir, a hard link, owners, modes and times" {
	run sb template import layers "$IMAGES/layers.tar"
	[ "$status" -eq 0 ] || fail "import: $output"
	t=$(tree layers)
	# .wh.gone removed etc/gone of the layer below; etc/kept stays.
	[ ! -e "$t/etc/gone" ] && [ -f "$t/etc/kept" ]
	[ ! -e "$t/etc/.wh.gone" ]
	# The opaque dir shows only what its own layer put there, below it too
	# (opaque/sub/old2 of the layer below goes; the layer's sub/fresh stays).
	[ "$(cd "$t/opaque" && find . | sort | xargs)" = ". ./new ./sub ./sub/fresh" ]
	# A hard link: one inode, two names, setuid kept.
	[ "$(stat -c %i "$t/bin/hard")" = "$(stat -c %i "$t/bin/tool")" ]
	[ "$(stat -c '%h %a %u:%g' "$t/bin/tool")" = "2 4755 0:0" ]
	# Owners and modes as in the archive; a time kept.
	[ "$(stat -c '%a %u:%g' "$t/data")" = "750 1234:2345" ]
	[ "$(stat -c '%a %u:%g' "$t/data/owned")" = "640 1234:2345" ]
	[ "$(stat -c %Y "$t/stamp")" = 1234567890 ]
	[ "$(stat -c %Y "$t/bin/tool")" = 1700000000 ]
	# A file replaced by a dir in a later layer.
	[ "$(stat -c '%F %a' "$t/replaced")" = "directory 700" ]
	# Symlinks as they are: an absolute one (resolved in the sandbox's
	# root at run time) and a relative one inside the image.
	[ "$(readlink "$t/lib64/ld.so")" = /lib/x86_64-linux-gnu/ld.so ]
	[ "$(readlink "$t/bin/rel")" = ../etc/kept ]
	# What a sandbox mounts over.
	[ -f "$t/usr/sbin/brig-init" ] && [ -d "$t/mnt/data" ] && [ -d "$t/home/sandbox" ]
	[ "$(stat -c '%u:%g' "$t/mnt/data")" = "1000:1000" ]
	store_has_only layers
	run sb template rm layers
	[ "$status" -eq 0 ]
	[ ! -e "$t" ]
	store_has_only
}

@test "template import: bad archives are refused, naming the entry or blob, and leave nothing" {
	check_refused() {
		local kind=$1 want=$2
		run sb template import "bad-$kind" "$IMAGES/$kind.tar"
		[ "$status" -eq 1 ] || fail "$kind: status $status: $output"
		[ "${#lines[@]}" -eq 1 ] || fail "$kind: more than one line: $output"
		[[ "$output" == *"$want"* ]] || fail "$kind: '$output' does not say '$want'"
	}
	check_refused dotdot 'entry `../escaped`: a `..` component would leave the image'
	check_refused through-symlink 'entry `etc2/evil`: its path passes through the symlink `etc2`'
	check_refused climb 'entry `a/b/up`: symlink to `../../../etc` climbs out of the image'
	check_refused hardlink-out 'entry `x`: hard link'
	check_refused bad-digest 'digest mismatch'
	[[ "$output" == *'layer `blobs/sha256/'* ]]
	check_refused bad-diff-id 'diff_id mismatch'
	check_refused bad-config 'config: blob `'
	check_refused bad-config 'digest mismatch'
	run sb template import missing "$IMAGES/no-such.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no-such.tar"*"No such file"* ]]
	run sb template import ../x "$IMAGES/layers.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *'invalid template name `../x`'* ]]
	# Nothing was written outside the store, nor left in it.
	[ ! -e "$BATS_FILE_TMPDIR/escaped" ] && [ ! -e "$BRIG_TEMPLATE_DIR/escaped" ]
	store_has_only
	[ -z "$(ls -A "$BRIG_TEMPLATE_DIR/trees")" ]
}

@test "template: a podman save archive starts a sandbox with the image's Env and WorkingDir" {
	require_sandbox_host
	[ -f "$IMAGES/podman-docker.tar" ] || fail "podman save: $(cat "$IMAGES/podman.out")"
	run sb template import pdocker "$IMAGES/podman-docker.tar"
	[ "$status" -eq 0 ] || fail "import: $output"
	# The small tree has jemalloc: no note.
	[[ "$output" != *jemalloc* ]]
	run sb template import poci "$IMAGES/podman-oci.tar"
	[ "$status" -eq 0 ] || fail "import: $output"
	# The same image: one tree for both names.
	[[ "$output" == *"its tree was there: shared"* ]]
	[ "$(tree pdocker)" = "$(tree poci)" ]
	[ "$(find "$BRIG_TEMPLATE_DIR/trees" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ]
	create_from pdocker tp1
	run sb exec tp1 -- sh -c 'pwd; echo "$FOO"; id -u; echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ] || fail "exec: $output"
	[ "$(squeeze "$output")" = "/srv bar 1000 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2" ]
	# The init has them too: its environment and its cwd.
	run sb exec tp1 -- sh -c 'tr "\0" "\n" </proc/1/environ | grep ^FOO=; readlink /proc/1/cwd'
	[ "$(squeeze "$output")" = "FOO=bar /srv" ]
	# The caller's own still win.
	run sb exec --cwd /tmp -e FOO=mine tp1 -- sh -c 'pwd; echo "$FOO"'
	[ "$(squeeze "$output")" = "/tmp mine" ]
	# The shared tree is read-only; /mnt/data is the sandbox's.
	run sb exec tp1 -- sh -c 'touch /srv/x 2>&1; echo w >/mnt/data/w && cat /mnt/data/w'
	[[ "$output" == *"Read-only file system"* ]]
	[[ "$output" == *w ]]
	create_from poci tp2
	run sb exec tp2 -- sh -c 'pwd; echo "$FOO"'
	[ "$(squeeze "$output")" = "/srv bar" ]
	run sb template ls
	[ "$status" -eq 0 ]
	echo "$output" | grep -Eq '^pdocker +[0-9a-f]{12} +1 +[0-9.]+[MG] +[0-9-]+ [0-9:]+ +1$'
	echo "$output" | grep -Eq '^poci +[0-9a-f]{12} +1 +[0-9.]+[MG] +[0-9-]+ [0-9:]+ +1$'
	sb rm tp1
	sb rm tp2
	run sb template rm pdocker
	[ "$status" -eq 0 ]
	# poci keeps the tree.
	[ -d "$(tree poci)" ]
	t=$(tree poci)
	run sb template rm poci
	[ "$status" -eq 0 ]
	[ ! -e "$t" ]
}

@test "template: an image without jemalloc says so once at import, and its sandbox runs as its user without the preload" {
	require_sandbox_host
	run sb template import busybox "$IMAGES/busybox.tar"
	[ "$status" -eq 0 ] || fail "import: $output"
	[ "$(echo "$output" | grep -c jemalloc)" -eq 1 ]
	[[ "$output" == *"template busybox: no libjemalloc.so.2 in the image; its sandboxes run without jemalloc"* ]]
	create_from busybox tb1
	# User app is 1001:1002 in the image's own passwd and group.
	run sb exec tb1 -- sh -c 'id -u; id -g; echo "$USER"; pwd; echo "$GREETING"; echo "[$LD_PRELOAD]"'
	[ "$status" -eq 0 ] || fail "exec: $output"
	[ "$(squeeze "$output")" = "1001 1002 app /work hi []" ]
	run sb exec tb1 -- sh -c 'echo x >/mnt/data/f && stat -c "%u:%g" /mnt/data/f'
	[ "$output" = "1001:1002" ]
	run sb exec -u 1001 tb1 -- id -u
	[ "$output" = 1001 ]
	run sb exec -u 0 tb1 -- id -u
	[ "$status" -eq 1 ]
	[[ "$output" == *"runs every process as its user app (1001:1002)"* ]]
	sb rm tb1
	sb template rm busybox
}

@test "template rm: refused while a sandbox uses it, allowed after; its tree goes" {
	require_sandbox_host
	sb template import rmme "$IMAGES/busybox.tar"
	t=$(tree rmme)
	create_from rmme trm
	run sb template rm rmme
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *'template `rmme` is used by 1 sandbox (`trm`)'* ]]
	[ -d "$t" ] && [ -f "$BRIG_TEMPLATE_DIR/names/rmme" ]
	sb rm trm
	run sb template rm rmme
	[ "$status" -eq 0 ] || fail "rm: $output"
	[ ! -e "$t" ]
	store_has_only
	run sb template rm rmme
	[ "$status" -eq 1 ]
	[[ "$output" == *'no template `rmme`'* ]]
}

@test "sandbox create --template: an unknown template, or one with --rootfs, is refused" {
	run sb create --template nosuch tx
	[ "$status" -eq 1 ]
	[[ "$output" == *'--template: no template `nosuch`'* ]]
	run sb create --rootfs / --template nosuch tx
	[ "$status" -eq 1 ]
	[[ "$output" == *"--rootfs and --template"* ]]
	run sb ls
	[[ "$output" != *tx* ]]
	run sb template import dup "$IMAGES/busybox.tar"
	[ "$status" -eq 0 ]
	run sb template import dup "$IMAGES/busybox.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *'template `dup` exists (rm it first)'* ]]
	sb template rm dup
}
