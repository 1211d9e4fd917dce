#!/bin/sh
# Prints the URI of the Debian archive that this machine's apt sources use
# for SUITE (default bookworm), so the sandbox tree comes from the same
# mirror as the host's packages. Reads the one-line format
# (/etc/apt/sources.list, sources.list.d/*.list) and deb822
# (sources.list.d/*.sources, skipping "Enabled: no").
# APT_DIR overrides /etc/apt (tests use it).
set -eu

suite=${1:-bookworm}
apt_dir=${APT_DIR:-/etc/apt}

list_files() {
	[ -f "$apt_dir/sources.list" ] && echo "$apt_dir/sources.list"
	for f in "$apt_dir"/sources.list.d/*.list; do
		[ -f "$f" ] && echo "$f"
	done
	return 0
}

sources_files() {
	for f in "$apt_dir"/sources.list.d/*.sources; do
		[ -f "$f" ] && echo "$f"
	done
	return 0
}

# One "URI SUITE" line per suite of every enabled "deb" entry, in the order
# apt reads them.
entries() {
	list_files | while read -r f; do
		awk '
		{ sub(/#.*/, "") }
		$1 != "deb" { next }
		{
			i = 2
			# [option=value ...] may span several fields.
			if ($i ~ /^\[/) {
				while (i <= NF && $i !~ /\]$/) i++
				i++
			}
			if (i + 1 <= NF) print $i, $(i + 1)
		}' "$f"
	done
	sources_files | while read -r f; do
		awk '
		function flush(   n, u, s, k, j, uris, suites) {
			if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
				n = split(uri, uris, " ")
				k = split(suite, suites, " ")
				for (u = 1; u <= n; u++)
					for (j = 1; j <= k; j++)
						print uris[u], suites[j]
			}
			types = uri = suite = enabled = field = ""
		}
		/^#/ { next }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]/ {
			# A continuation line belongs to the field above it.
			line = $0; gsub(/^[ \t]+|[ \t]+$/, "", line)
			if (field == "uris") uri = uri " " line
			else if (field == "suites") suite = suite " " line
			else if (field == "types") types = types " " line
			next
		}
		{
			field = tolower($0); sub(/:.*/, "", field)
			value = $0; sub(/^[^:]*:[ \t]*/, "", value); sub(/[ \t]+$/, "", value)
			if (field == "types") types = value
			else if (field == "uris") uri = value
			else if (field == "suites") suite = value
			else if (field == "enabled") enabled = value
		}
		END { flush() }' "$f"
	done
}

uri=$(entries | awk -v s="$suite" '$2 == s { print $1; exit }')
if [ -z "$uri" ]; then
	echo "rootfs: no \"deb\" entry for suite $suite in $apt_dir/sources.list or $apt_dir/sources.list.d/; add one or set BRIG_ROOTFS_MIRROR" >&2
	exit 1
fi
echo "$uri"
