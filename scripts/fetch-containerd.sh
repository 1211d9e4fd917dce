#!/bin/sh
# Fetches the containerd of newer Debian releases (1.7 from trixie, 2.x from
# sid) for the shim's tests, without installing them: each package is
# unpacked under the cache, and the test runs put its usr/bin first on
# PATH (containerd, ctr, containerd-shim-runc-v2 of that version).
#
#   scripts/fetch-containerd.sh [SUITE...]   (default: trixie sid)
#
#   BRIG_CONTAINERD_CACHE   where they go (default /var/cache/brig-containerd)
#
# The archive is the one this machine's apt sources name for its own
# release; nothing here names a host. Prints one line per suite:
# "SUITE VERSION BIN_DIR". Exits non-zero when a suite could not be
# fetched.
set -eu

cache=${BRIG_CONTAINERD_CACHE:-/var/cache/brig-containerd}
[ "$#" -gt 0 ] || set -- trixie sid

die() {
	echo "fetch-containerd.sh: $*" >&2
	exit 1
}

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"

# The URI of the archive serving this release's main suite, from the
# one-line (.list) and deb822 (.sources) forms of apt's sources.
archive_uri() {
	{
		cat /etc/apt/sources.list 2>/dev/null
		cat /etc/apt/sources.list.d/*.list 2>/dev/null
	} | awk -v s="$codename" '$1 == "deb" && $0 !~ /\[/ && $3 == s { print $2; exit }'
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v s="$codename" '
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
			/^$/ { if (ok && uri) { print uri; exit } ok = 0; uri = "" }
			END { if (ok && uri) print uri }' "$f"
	done
}
uri=$(archive_uri | head -n 1)
[ -n "$uri" ] || die "no apt source for $codename in /etc/apt (sources.list, sources.list.d)"

work=$cache/apt
mkdir -p "$work/lists/partial" "$work/archives/partial"
: >"$work/sources.list"
for suite in "$@"; do
	echo "deb $uri $suite main" >>"$work/sources.list"
done
apt_opts="-o Dir::Etc::sourcelist=$work/sources.list -o Dir::Etc::sourceparts=- \
	-o Dir::State::Lists=$work/lists -o Dir::Cache=$work -o APT::Get::List-Cleanup=0 \
	-o APT::Sandbox::User=root"
# shellcheck disable=SC2086 # the options are words
apt-get -qq $apt_opts update >/dev/null || die "apt-get update of $*"

status=0
for suite in "$@"; do
	# shellcheck disable=SC2086
	version=$(apt-cache $apt_opts madison containerd | awk -v s="$suite" '$0 ~ " " s "/main" { print $3; exit }')
	if [ -z "$version" ]; then
		echo "fetch-containerd.sh: $suite has no containerd" >&2
		status=1
		continue
	fi
	dir=$cache/$version
	if [ ! -x "$dir/usr/bin/containerd" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		# shellcheck disable=SC2086
		(cd "$dir.tmp" && apt-get -qq $apt_opts download "containerd=$version") >/dev/null ||
			die "download containerd $version"
		dpkg-deb -x "$dir.tmp"/containerd_*.deb "$dir.tmp/root"
		rm -rf "$dir" && mv "$dir.tmp/root" "$dir" && rm -rf "$dir.tmp"
	fi
	echo "$suite $version $dir/usr/bin"
done
exit "$status"
