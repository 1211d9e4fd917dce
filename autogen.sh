#!/bin/sh
# Generates ./configure from configure.ac.
set -e
cd "$(dirname "$0")"
autoreconf --install --force >/dev/null
echo "now run ./configure && make"
