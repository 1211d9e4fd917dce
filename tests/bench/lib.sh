# Shared by the benchmarks (run.sh, sandbox.sh): sourced, not run.

# rotated I NAMES...: the order of round I. Rounds 0..N-1 take the names
# starting at the I-th; rounds N..2N-1 take the same rotations reversed, and
# so on. Which runtime goes first, and which one runs right before which,
# then changes from round to round: for three runtimes, over six rounds,
# each one follows each other one equally often (a runtime's last command
# leaves the caches, and on this kind of host the CPU, in a state that
# favours or slows whatever comes next).
rotated() {
	local i=$1
	shift
	local -a names=("$@")
	local k n=${#names[@]} order=()
	for ((k = 0; k < n; k++)); do
		order+=("${names[$(((i + k) % n))]}")
	done
	if (((i / n) % 2)); then
		for ((k = n - 1; k >= 0; k--)); do
			echo "${order[k]}"
		done
	else
		printf '%s\n' "${order[@]}"
	fi
}
