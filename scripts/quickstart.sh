#!/bin/sh
# From a fresh Debian 12 checkout to a running container: installs the
# dependencies, builds and installs brig under /usr/local, then runs a
# busybox container that says hello.
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
./autogen.sh
./configure --prefix=/usr/local
make -j"$(nproc)"
make install

brig=/usr/local/bin/brig
bundle=$(mktemp -d "${TMPDIR:-/tmp}/brig-quickstart.XXXXXX")
id=quickstart-$$
cleanup() {
	"$brig" delete --force "$id" >/dev/null 2>&1 || true
	rm -rf "$bundle"
}
trap cleanup EXIT INT TERM

# A root filesystem of one static busybox and its applets.
mkdir -p "$bundle/rootfs/bin"
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || ln -s busybox "$bundle/rootfs/bin/$applet"
done

cd "$bundle"
"$brig" spec
jq '.process.terminal = false | .process.args = ["echo", "hello from brig"]' \
	config.json >config.json.new
mv config.json.new config.json

"$brig" run "$id"
