#!/bin/sh
# Rebuilds the tree's jemalloc from its Debian source package without
# jemalloc's C++ operators, and puts it in the place of Debian's file.
#
#   rootfs/jemalloc.sh TREE MIRROR SUITE
#
# Why: Debian's libjemalloc2 defines operator new and delete, so it needs
# libstdc++, and every process of a sandbox (all preload jemalloc) loads
# and relocates libstdc++, libm and libgcc_s: about 1 ms more for each
# `python3 -c 'print(1)'` here. Without those operators a C++ program
# still allocates from jemalloc: libstdc++'s operator new calls malloc.
# Debian's --enable-prof (heap profiling, off unless MALLOC_CONF asks for
# it) is left out too: it links libgcc_s (its unwinder, whose constructor
# probes the CPU) and libm, and sets up its state in every process, about
# 0.45 ms of each python3 start. Debian's file, kept beside it, has it.
#
# The source is the one of the version installed in TREE, fetched by apt
# from MIRROR (a deb-src entry of the archive the tree came from, checked
# against Debian's archive keyring) into a scratch dir; it is built with
# Debian's own configure options (debian/rules) less --enable-prof, and
# --disable-cxx.
# Debian's file is diverted (dpkg-divert) to libjemalloc.so.2.debian, so
# dpkg knows and the path stays the one every sandbox preloads. What was
# built is recorded in TREE/etc/brig/jemalloc-build. Exits non-zero, with
# TREE unchanged, when any step fails.
set -eu

tree=$1
mirror=$2
suite=$3
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
src=$(chroot "$tree" dpkg-query -W -f '${source:Package}' libjemalloc2)
# shellcheck disable=SC2016
version=$(chroot "$tree" dpkg-query -W -f '${source:Version}' libjemalloc2)
lib=$(chroot "$tree" dpkg -L libjemalloc2 | grep '/libjemalloc\.so\.2$' | head -n 1)
if [ -z "$src" ] || [ -z "$version" ] || [ -z "$lib" ]; then
	echo "jemalloc: libjemalloc2 is not installed in $tree" >&2
	exit 1
fi
for tool in apt-get gcc make patch; do
	command -v "$tool" >/dev/null || {
		echo "jemalloc: $tool not found" >&2
		exit 1
	}
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/src"
echo "deb-src [signed-by=$keyring] $mirror $suite main" >"$work/sources.list"
apt() {
	apt-get -q -o Dir::State::Lists="$work/lists" -o Dir::Etc::SourceList="$work/sources.list" \
		-o Dir::Etc::SourceParts="$work/parts" -o Dir::Cache="$work/cache" \
		-o APT::Sandbox::User=root "$@"
}
if ! apt update >"$work/apt.log" 2>&1 ||
	! (cd "$work/src" && apt source --download-only "$src=$version") >>"$work/apt.log" 2>&1; then
	tail -n 5 "$work/apt.log" >&2
	echo "jemalloc: could not fetch the source of $src $version from $mirror" >&2
	exit 1
fi

upstream=${version%-*}
upstream=${upstream#*:}
dir=$work/src/$src-$upstream
mkdir -p "$dir"
tar -xf "$work/src/${src}_$upstream.orig.tar".* -C "$dir" --strip-components=1
tar -xf "$work/src/${src}_${version#*:}.debian.tar".* -C "$dir"
if [ -f "$dir/debian/patches/series" ]; then
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$dir/debian/patches/series" | while read -r p _; do
		patch -d "$dir" -p1 -s <"$dir/debian/patches/$p"
	done
fi

# debian/rules' page sizes: 4 KiB on amd64 and i386, 64 KiB elsewhere.
# Its --enable-prof (amd64 and i386) is left out, as said above.
arch=$(chroot "$tree" dpkg --print-architecture)
case $arch in
amd64 | i386) opts="--with-lg-page=12" ;;
*) opts="--with-lg-page=16" ;;
esac
flags() { dpkg-buildflags --get "$1" 2>/dev/null || true; }
# shellcheck disable=SC2086 # opts are words
(cd "$dir" && CFLAGS="$(flags CFLAGS)" CPPFLAGS="$(flags CPPFLAGS)" LDFLAGS="$(flags LDFLAGS)" \
	./configure --with-version=VERSION --with-lg-hugepage=21 $opts --disable-cxx --disable-doc &&
	make -j"$(nproc)" lib/libjemalloc.so.2) >"$work/build.log" 2>&1 || {
	tail -n 20 "$work/build.log" >&2
	echo "jemalloc: the build of $src $version failed" >&2
	exit 1
}
built=$dir/lib/libjemalloc.so.2
strip --strip-unneeded "$built"
if readelf -d "$built" | grep -q 'NEEDED.*\(libstdc++\|libgcc_s\)'; then
	echo "jemalloc: the build still needs libstdc++ or libgcc_s" >&2
	exit 1
fi

chroot "$tree" dpkg-divert --quiet --rename --divert "$lib.debian" --add "$lib"
install -m 0644 "$built" "$tree$lib"
printf '%s %s from its Debian source, configured as debian/rules does for %s, without --enable-prof, with --disable-cxx (rootfs/jemalloc.sh); Debian'"'"'s file is %s.debian\n' \
	"$src" "$version" "$arch" "$lib" >"$tree/etc/brig/jemalloc-build"
echo "$lib"
