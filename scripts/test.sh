#!/bin/sh
# Builds brig with warnings as errors and runs every test (`make check`:
# unit tests, then the bats integration suite as root).
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
./autogen.sh
./configure --enable-werror
make -j"$(nproc)"

if ! make check; then
	# automake keeps the details of failing tests in test-suite.log files.
	find . -name test-suite.log -not -path './.git/*' | while read -r log; do
		echo "==================== $log"
		cat "$log"
	done
	exit 1
fi
