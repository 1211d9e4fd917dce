#!/bin/bash
# Builds the OCI runtime-tools validation programs, runtimetest and the
# busybox rootfs tarball into $CACHE/bin, offline except for one download of
# Debian's runtime-tools source package.
#
# Usage: build.sh [CACHE_DIR]
# Environment:
#   BRIG_CONFORMANCE_CACHE   cache directory (default /var/cache/brig-conformance)
#   RUNTIME_TOOLS_SRC        an unpacked runtime-tools source tree or its
#                            .orig.tar.xz; skips the download
#   RUNTIME_TOOLS_VERSION    Debian version of the source package to fetch
#   RUNTIME_TOOLS_SUITE      Debian suite that serves it (default trixie)
#   APT_MIRROR               Debian mirror URI (default: the machine's own)
#
# Needs: golang-go (>= 1.19) and the golang-*-dev packages listed in
# README.md, busybox-static, tar, xz-utils, apt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${BRIG_CONFORMANCE_CACHE:-/var/cache/brig-conformance}}
version=${RUNTIME_TOOLS_VERSION:-0.9.0.109.ge931285-1}
suite=${RUNTIME_TOOLS_SUITE:-trixie}
pkg=golang-github-opencontainers-runtime-tools
bin=$cache/bin

log() { echo "conformance build: $*" >&2; }
die() { log "$*"; exit 1; }

# The first Debian URI the machine's own apt sources use for its release,
# so the project never names a mirror.
machine_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk '
			/^[ \t]*$/ { if (deb && uri != "" && !sec) { print uri; exit } deb = 0; uri = ""; sec = 0; next }
			tolower($1) == "types:" && / deb( |$)/ { deb = 1 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" && /-security/ { sec = 1 }
			END { if (deb && uri != "" && !sec) print uri }
		' "$f"
	done
	if [ -r /etc/apt/sources.list ]; then
		awk '$1 == "deb" && $0 !~ /-security/ {
			for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit }
		}' /etc/apt/sources.list
	fi
}

# Debian's binary package ships only the library; the validation programs
# and runtimetest are only in the source package. A private apt state keeps
# the machine's apt configuration untouched.
fetch_source() {
	local dest=$1 mirror apt_dir opts tarball
	mirror=${APT_MIRROR:-$(machine_mirror | head -n1)}
	[ -n "$mirror" ] || die "no Debian mirror in the apt sources; set APT_MIRROR"
	apt_dir=$cache/apt
	rm -rf "$apt_dir"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/download"
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
		>"$apt_dir/sources.list"
	opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
	log "fetching $pkg $version source from $suite"
	apt-get -q "${opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update failed; see $apt_dir/update.log"
	# The .dsc is sometimes not served while the tarballs are, so failure of
	# the whole command is tolerated as long as the upstream tarball arrived.
	(cd "$apt_dir/download" && apt-get -q "${opts[@]}" source --download-only "$pkg=$version") \
		>"$apt_dir/source.log" 2>&1 || true
	tarball=$(find "$apt_dir/download" -maxdepth 1 -name "${pkg}_*.orig.tar.*" | head -n1)
	[ -n "$tarball" ] || die "could not download the $pkg source; see $apt_dir/source.log"
	unpack_source "$tarball" "$dest"
}

unpack_source() {
	local tarball=$1 dest=$2 tmp
	tmp=$(mktemp -d "$cache/unpack.XXXXXX")
	tar -xf "$tarball" -C "$tmp"
	rm -rf "$dest"
	mv "$tmp"/*/ "$dest"
	rmdir "$tmp"
}

# A busybox root like the one upstream ships, but from Debian's static busybox.
build_rootfs() {
	local out=$1 root busybox applet
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] || busybox=/bin/busybox
	file_is_static "$busybox" || die "need a static busybox (busybox-static)"
	root=$(mktemp -d "$cache/rootfs.XXXXXX")
	chmod 755 "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,etc,tmp}
	chmod 1777 "$root/tmp"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
	done
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/:/bin/false' \
		'nobody:x:65534:65534:nobody:/:/bin/false' >"$root/etc/passwd"
	printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'nogroup:x:65534:' >"$root/etc/group"
	tar --numeric-owner --owner=0 --group=0 -C "$root" -czf "$out.tmp" .
	mv "$out.tmp" "$out"
	rm -rf "$root"
}

file_is_static() {
	! LC_ALL=C ldd "$1" >/dev/null 2>&1
}

build_programs() {
	local src=$1 gopath=$cache/gopath goarch
	rm -rf "$gopath"
	mkdir -p "$gopath/src/github.com/opencontainers" "$gopath/src/github.com/mndrix" "$bin.new"
	ln -s "$src" "$gopath/src/github.com/opencontainers/runtime-tools"
	# Our own TAP writer stands in for the unpackaged github.com/mndrix/tap-go.
	cp -r "$here/tap" "$gopath/src/github.com/mndrix/tap-go"
	export GO111MODULE=off GOPROXY=off GOFLAGS='' GOPATH="$gopath:/usr/share/gocode"
	export GOCACHE=$cache/gocache
	local rt=github.com/opencontainers/runtime-tools
	log "building runtimetest"
	# runtimetest runs inside the busybox root, so it must be static.
	CGO_ENABLED=0 go build -o "$bin.new/runtimetest" "$rt/cmd/runtimetest"
	log "building the validation programs"
	# Listed one by one: the "..." pattern does not follow the symlink.
	local progs=() d
	for d in "$src"/validation/*/; do
		d=$(basename "$d")
		[ "$d" = util ] || progs+=("$rt/validation/$d")
	done
	go build -o "$bin.new/" "${progs[@]}"
	goarch=$(go env GOARCH)
	build_rootfs "$bin.new/rootfs-$goarch.tar.gz"
	rm -rf "$bin"
	mv "$bin.new" "$bin"
}

command -v go >/dev/null || die "go not found; install golang-go"
mkdir -p "$cache"

# Rebuild only when an input changed: the source version, the TAP package,
# this script, the Go toolchain or busybox.
stamp=$( {
	echo "$version ${RUNTIME_TOOLS_SRC:-}"
	cat "$here/tap/tap.go" "$0"
	go version
	sha256sum "$(command -v busybox || echo /bin/busybox)"
} | sha256sum | cut -d' ' -f1)
if [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ]; then
	exit 0
fi

src=$cache/runtime-tools
if [ -n "${RUNTIME_TOOLS_SRC:-}" ]; then
	if [ -d "$RUNTIME_TOOLS_SRC" ]; then
		src=$(cd "$RUNTIME_TOOLS_SRC" && pwd)
	else
		unpack_source "$RUNTIME_TOOLS_SRC" "$src"
	fi
elif [ ! -f "$src/.version" ] || [ "$(cat "$src/.version")" != "$version" ]; then
	fetch_source "$src"
	echo "$version" >"$src/.version"
fi
[ -d "$src/validation" ] || die "$src has no validation/ directory"

rm -rf "$bin.new"
build_programs "$src"
echo "$stamp" >"$bin/.stamp"
n=0
for f in "$bin"/*; do
	case ${f##*/} in runtimetest | rootfs-*) ;; *) n=$((n + 1)) ;; esac
done
log "built $n programs in $bin"
