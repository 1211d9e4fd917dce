#!/bin/bash
# The house rules a compiler doesn't check (docs/architecture.md), over the
# tracked files of the tree. One line per finding, `file:line: kind: what`,
# then `house: N findings`; exits 0 only when N is 0.
#
#   format    a region of a C file that clang-format (the checked-in
#             .clang-format) would rewrite
#   layers    an include that points up: libcontainer/ sees only itself,
#             sandbox/ sees libcontainer/ and itself, never src/ or shim/
#   size      a C file of the production folders over 800 lines
#   function  a function over 80 lines (production code: libcontainer/
#             sandbox/ src/ shim/), measured from its `{` at column 0 to
#             the next `}` at column 0
#   man       a page in man/ that Makefile.am doesn't install, or one it
#             names that doesn't exist
#   product   libcontainer/ naming the sandbox product (the sandbox, its
#             profile, jemalloc, brig-init, BRIG_INIT, /mnt/data)
#
# Usage: scripts/check-house.sh [KIND...]   (default: every kind)
# CLANG_FORMAT names the binary (default: clang-format-14, else clang-format:
# the style is measured with 14, and another version formats differently).
set -u
cd "$(dirname "$0")/.." || exit 2

MAX_FILE_LINES=800
MAX_FUNCTION_LINES=80
C_DIRS=(libcontainer sandbox src shim tests/unit tests/fuzz tests/tools tests/bench)
PRODUCTION_DIRS=(libcontainer sandbox src shim)

kinds=${*:-format layers size function man product}
total=0
summary=""

# The tracked C files under the given folders (and their subfolders),
# generated code left out.
# The tracked files matching the patterns: git's list in a clone, else
# (a tarball) every file under the tree that matches.
tracked() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -- "$@"
		return
	fi
	local pat
	for pat in "$@"; do
		find "${pat%%/*}" -type f -path "$pat" 2>/dev/null
	done | sort -u
}

c_files() {
	local d specs=()
	for d in "$@"; do
		specs+=("$d/*.c" "$d/*.h")
	done
	tracked "${specs[@]}" | grep -v '^shim/proto/.*\.pb-c\.[ch]$'
}

# find KIND LOCATION WHAT: one finding.
n_kind=0
find_() {
	printf '%s: %s: %s\n' "$2" "$1" "$3"
	n_kind=$((n_kind + 1))
}

check_format() {
	local cf=${CLANG_FORMAT:-}
	if [ -z "$cf" ]; then
		cf=$(command -v clang-format-14 || command -v clang-format || true)
	fi
	if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
		find_ format .clang-format "clang-format is not installed (Debian: clang-format); nothing was checked"
		return
	fi
	case $("$cf" --version) in
	*" version 14."*) ;;
	*) echo "house: $cf is not clang-format 14, which the style was measured with" >&2 ;;
	esac
	if ! "$cf" --style=file --assume-filename=libcontainer/x.c --dump-config >/dev/null; then
		find_ format .clang-format "$cf refuses this style; nothing was checked"
		return
	fi
	local f
	while read -r f; do
		# Each hunk of the difference is a finding, at its first line.
		# shellcheck disable=SC2094 # f is only read
		"$cf" --style=file --assume-filename="$f" <"$f" | diff -U0 "$f" - |
			sed -nE 's/^@@ -([0-9]+)(,([0-9]+))? .*/\1 \3/p' |
			while read -r line count; do
				if [ "${count:-1}" -eq 0 ]; then
					# Lines to insert after `line`.
					printf '%s:%s: format: clang-format would add lines after this one\n' "$f" "$line"
				else
					printf '%s:%s: format: %s line(s) differ from clang-format\n' \
						"$f" "$line" "${count:-1}"
				fi
			done
	done < <(c_files "${C_DIRS[@]}") >"$tmp/format"
	n_kind=$(wc -l <"$tmp/format")
	cat "$tmp/format"
}

# Where the compiler would find `#include "path"` written in `file`: its
# own folder, then libcontainer/ (-iquote), then the top (-iquote, which
# libcontainer/ doesn't get, but an include that only works there is still
# pointing up); last, the folders of the layers above, whose -iquote paths
# would make it compile. Sets `target` to the path from the top, or to
# nothing (a system header).
resolve_include() {
	local file=$1 path=$2 c
	target=
	for c in "${file%/*}/$path" "libcontainer/$path" "$path" \
		"sandbox/$path" "src/$path" "shim/$path" "shim/proto/$path"; do
		if [ -e "$c" ]; then
			case $c in
			*..*) target=$(realpath -m --relative-to=. "$c") ;;
			*) target=$c ;;
			esac
			return
		fi
	done
	# Not in the tree: a system header, unless it names a layer or is
	# generated into one (the shim's protocol headers).
	case $path in
	sandbox/* | src/* | shim/*) target=$path ;;
	*.pb-c.h) target=shim/proto/$path ;;
	esac
}

check_layers() {
	local f line text inc allowed a ok
	local re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"]'
	for layer in libcontainer sandbox; do
		case $layer in
		libcontainer) allowed="libcontainer/" ;;
		sandbox) allowed="libcontainer/ sandbox/" ;;
		esac
		while IFS=: read -r f line text; do
			[[ $text =~ $re ]] || continue
			inc=${BASH_REMATCH[1]}
			resolve_include "$f" "$inc"
			[ -n "$target" ] || continue
			ok=no
			for a in $allowed; do
				case $target in "$a"*) ok=yes ;; esac
			done
			[ "$ok" = yes ] && continue
			find_ layers "$f:$line" "includes \"$inc\" ($target): $layer/ may include only ${allowed// /, }"
		done < <(c_files "$layer" | xargs -r grep -H -n '^[[:space:]]*#[[:space:]]*include')
	done
	check_public
}

# The library's public headers (docs/architecture.md): the only ones of
# libcontainer/ that sandbox/, src/ and shim/ may include.
PUBLIC_HEADERS="container/container.h container/handler.h container/checkpoint.h
	container/state.h spec/spec.h cgroup/cgroup.h cgroup/systemd.h process/terminal.h selfexe/selfexe.h
	base/error.h base/cleanup.h base/utils.h base/path.h base/signals.h base/sha256.h base/fdpass.h
	rootfs/mounts.h process/idmap.h rootfs/idmap_tree.h process/seccomp.h process/identity.h"

check_public() {
	local f line text inc
	local re='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)"'
	while IFS=: read -r f line text; do
		[[ $text =~ $re ]] || continue
		inc=${BASH_REMATCH[1]}
		[ -e "libcontainer/$inc" ] || continue
		case " $(echo $PUBLIC_HEADERS) " in *" $inc "*) continue ;; esac
		find_ layers "$f:$line" "includes \"$inc\", internal to libcontainer/ (public headers: docs/architecture.md)"
	done < <(c_files sandbox src shim | xargs -r grep -H -n '^[[:space:]]*#[[:space:]]*include')
}

check_size() {
	local n f
	while read -r n f; do
		if [ "$f" != total ] && [ "$n" -gt "$MAX_FILE_LINES" ]; then
			find_ size "$f:1" "$n lines (at most $MAX_FILE_LINES)"
		fi
	done < <(c_files "${PRODUCTION_DIRS[@]}" | xargs -r wc -l)
}

check_function() {
	local f
	while read -r f; do
		awk -v file="$f" -v max="$MAX_FUNCTION_LINES" '
			# The last line at column 0 before the `{` starts the signature.
			/^[A-Za-z_]/ && !in_body { sig = $0; sig_line = NR }
			/^\{/ && !in_body { in_body = 1; open = NR; next }
			/^\}/ && in_body {
				in_body = 0
				n = NR - open + 1
				if (n > max) {
					name = sig
					gsub(/__attribute__\(\([^)]*\)\)/, "", sig)
					if (match(sig, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/))
						name = substr(sig, RSTART, RLENGTH - 1)
					sub(/[ \t]+$/, "", name)
					printf "%s:%d: function: %s() is %d lines (at most %d)\n",
						file, sig_line, name, n, max
				}
			}' "$f"
	done < <(c_files "${PRODUCTION_DIRS[@]}") >"$tmp/function"
	n_kind=$(wc -l <"$tmp/function")
	cat "$tmp/function"
}

check_man() {
	local installed page
	# Every word of every dist_man_MANS assignment, continuation lines too.
	installed=$(awk '
		/^dist_man_MANS[[:space:]]*\+?=/ { on = 1; sub(/^[^=]*=/, "") }
		on { line = $0; cont = sub(/\\$/, "", line); print line; if (!cont) on = 0 }' Makefile.am |
		tr -s ' \t' '\n' | grep -v '^$')
	while read -r page; do
		if ! grep -qxF "$page" <<<"$installed"; then
			find_ man "$page:1" "not in Makefile.am's dist_man_MANS: \`make install\` leaves it out"
		fi
	done < <(tracked 'man/*.[0-9]')
	while read -r page; do
		if [ ! -e "$page" ]; then
			line=$(grep -n -F "$page" Makefile.am | head -n 1 | cut -d: -f1)
			find_ man "Makefile.am:${line:-1}" "dist_man_MANS names $page, which doesn't exist"
		fi
	done <<<"$installed"
}

# Words that belong to the sandbox product, not to a generic runtime:
# the sandbox, its profile (not a seccomp or AppArmor profile: those are
# the spec's), its allocator wiring, its PID 1 and its workspace.
PRODUCT_WORDS='sandbox|brig_profile|container_profile|profile_settings|jemalloc|malloc_conf|\bBRIG_INIT\b|mnt/data|brig-init'

check_product() {
	local f
	while read -r f; do
		grep -n -i -o -E "$PRODUCT_WORDS" "$f" |
			awk -F: -v file="$f" '
				# One finding per line, with the words it has, each once.
				!(($1, $2) in had) { had[$1, $2] = 1; w[$1] = w[$1] (w[$1] == "" ? "" : ", ") $2 }
				!($1 in seen) { seen[$1] = 1; order[++n] = $1 }
				END {
					for (i = 1; i <= n; i++)
						printf "%s:%s: product: names the sandbox product (%s)\n", file, order[i], w[order[i]]
				}'
	done < <(tracked 'libcontainer/*') >"$tmp/product"
	n_kind=$(wc -l <"$tmp/product")
	cat "$tmp/product"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for kind in $kinds; do
	case $kind in
	format | layers | size | function | man | product) ;;
	*) echo "house: unknown check \`$kind\` (format layers size function man product)" >&2; exit 2 ;;
	esac
	n_kind=0
	"check_$kind"
	total=$((total + n_kind))
	summary="$summary${summary:+, }$kind $n_kind"
done

echo "house: $total findings ($summary)"
[ "$total" -eq 0 ]
