#!/bin/sh
# Installs everything needed to build and test brig on Debian 12.
# Re-runs are fast: apt is not touched when every package is present.
set -eu

PACKAGES="
	build-essential autoconf automake pkg-config
	libseccomp-dev libyajl-dev libcap-dev
	criu libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev libmicrohttpd-dev libsystemd-dev libarchive-dev curl
	bats busybox-static jq iproute2 procps coreutils util-linux mount
	python3 podman docker.io
	debootstrap squashfs-tools e2fsprogs lxcfs strace
	clang clang-format libclang-rt-14-dev crun
	containerd containernetworking-plugins python3-grpcio python3-protobuf protobuf-compiler
	golang-go xz-utils golang-github-google-uuid-dev golang-github-hashicorp-go-multierror-dev
	golang-github-mrunalp-fileutils-dev golang-github-opencontainers-runtime-spec-dev
	golang-github-opencontainers-selinux-dev golang-github-sirupsen-logrus-dev
	golang-gocapability-dev golang-github-urfave-cli-dev golang-github-xeipuuv-gojsonschema-dev
	golang-golang-x-sys-dev golang-github-blang-semver-dev golang-gopkg-yaml.v2-dev
"

missing=""
for pkg in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case $status in
	*" installed") ;;
	*) missing="$missing $pkg" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "install-deps: all build and test dependencies are installed"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	as_root=""
elif command -v sudo >/dev/null 2>&1; then
	as_root="sudo"
else
	echo "install-deps: missing:$missing; run this script as root" >&2
	exit 1
fi

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -q
# shellcheck disable=SC2086 # the list is meant to split
$as_root apt-get install -y -q --no-install-recommends $missing </dev/null
