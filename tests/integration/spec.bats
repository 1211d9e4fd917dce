#!/usr/bin/env bats
# `brig spec`: the starting point of every bundle.

load helpers

setup() {
	setup_bundle
	EMPTY=$BATS_TEST_TMPDIR/new-bundle
	mkdir -p "$EMPTY"
}

@test "spec writes config.json in the current directory" {
	cd "$EMPTY"
	run brig spec
	[ "$status" -eq 0 ]
	[ -f "$EMPTY/config.json" ]
	jq -e . "$EMPTY/config.json" >/dev/null
}

@test "spec --bundle writes config.json into the given directory" {
	mkdir "$BATS_TEST_TMPDIR/elsewhere"
	cd "$BATS_TEST_TMPDIR/elsewhere"
	run brig spec --bundle "$EMPTY"
	[ "$status" -eq 0 ]
	jq -e . "$EMPTY/config.json" >/dev/null
	[ ! -e config.json ]
}

@test "spec -b is a short form of --bundle" {
	run brig spec -b "$EMPTY"
	[ "$status" -eq 0 ]
	[ -f "$EMPTY/config.json" ]
}

@test "the default config has the fields a bundle needs" {
	run brig spec -b "$EMPTY"
	[ "$status" -eq 0 ]
	cfg=$EMPTY/config.json
	[[ "$(jq -r .ociVersion "$cfg")" =~ ^1\.[0-9]+\.[0-9]+ ]]
	[ "$(jq -r .root.path "$cfg")" = rootfs ]
	[ "$(jq -r '.process.args | type' "$cfg")" = array ]
	[ "$(jq -r '.process.args | length' "$cfg")" -ge 1 ]
	[ "$(jq -r .process.cwd "$cfg")" = / ]
	[ "$(jq -r .process.user.uid "$cfg")" = 0 ]
	jq -e '.process.env | any(startswith("PATH="))' "$cfg" >/dev/null
	jq -e '.process.capabilities.bounding | length > 0' "$cfg" >/dev/null
	jq -e '.process.noNewPrivileges == true' "$cfg" >/dev/null
	jq -e '.hostname | type == "string"' "$cfg" >/dev/null
	for dest in /proc /dev /dev/pts /dev/shm /sys; do
		jq -e --arg d "$dest" '.mounts | any(.destination == $d)' "$cfg" >/dev/null ||
			fail "no mount for $dest"
	done
	for ns in pid ipc uts mount network; do
		jq -e --arg t "$ns" '.linux.namespaces | any(.type == $t)' "$cfg" >/dev/null ||
			fail "no $ns namespace"
	done
	jq -e '.linux.maskedPaths | index("/proc/kcore")' "$cfg" >/dev/null
	jq -e '.linux.readonlyPaths | index("/proc/sys")' "$cfg" >/dev/null
}

@test "the default hostname is brig" {
	# brig-specific: runc's default is "runc".
	run brig spec -b "$EMPTY"
	[ "$status" -eq 0 ]
	[ "$(jq -r .hostname "$EMPTY/config.json")" = brig ]
}

@test "spec --rootless maps the caller's ids in a user namespace" {
	run brig spec --rootless -b "$EMPTY"
	[ "$status" -eq 0 ]
	cfg=$EMPTY/config.json
	jq -e '.linux.namespaces | any(.type == "user")' "$cfg" >/dev/null
	jq -e --argjson u "$(id -u)" '.linux.uidMappings | any(.containerID == 0 and .hostID == $u)' "$cfg" >/dev/null
	jq -e --argjson g "$(id -g)" '.linux.gidMappings | any(.containerID == 0 and .hostID == $g)' "$cfg" >/dev/null
	# An unprivileged user cannot configure a network namespace's links.
	refute jq -e '.linux.namespaces | any(.type == "network")' "$cfg" >/dev/null
}

@test "spec refuses to overwrite an existing config.json" {
	echo '{"mine": true}' >"$EMPTY/config.json"
	run --separate-stderr brig spec -b "$EMPTY"
	assert_one_line_error config.json
	[ "$(jq -r .mine "$EMPTY/config.json")" = true ]
}

@test "spec into a directory that does not exist fails" {
	run --separate-stderr brig spec -b "$EMPTY/nope"
	assert_one_line_error nope
	[ ! -e "$EMPTY/nope" ]
}

@test "the default config runs as is once args and terminal are set" {
	run brig spec -b "$EMPTY"
	[ "$status" -eq 0 ]
	cp -a "$ROOTFS" "$EMPTY/rootfs"
	jq '.process.terminal = false | .process.args = ["echo", "default ok"]' \
		"$EMPTY/config.json" >"$EMPTY/c.json"
	mv "$EMPTY/c.json" "$EMPTY/config.json"
	run brig run -b "$EMPTY" "$CID"
	[ "$status" -eq 0 ]
	[ "$output" = "default ok" ]
}
