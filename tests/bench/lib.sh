# Shared by the benchmarks (run.sh, sandbox.sh): sourced, not run.

# rotated I NAMES...: the names, starting at the I-th, so that no runtime
# always runs first or right after the same other one.
rotated() {
	local i=$1
	shift
	local -a names=("$@")
	local k n=${#names[@]}
	for ((k = 0; k < n; k++)); do
		echo "${names[$(((i + k) % n))]}"
	done
}
