#!/usr/bin/env python3
"""Image archives for sandbox_template.bats, written the way podman and
docker write them, good ones and bad ones.

    template-image.py KIND OUT.tar

KIND:
  layers          OCI, three layers (gzip, zstd, plain): a whiteout, an
                  opaque dir, a hard link, symlinks, a setuid file, owners
                  and times to keep
  busybox         docker-archive of a busybox tree (no jemalloc), Env
                  GREETING=hi, WorkingDir /work, User app (1001:1002 in its
                  /etc/passwd and /etc/group)
  dotdot          an entry `../escaped` (docker-archive)
  through-symlink an absolute symlink `etc2 -> /etc`, then an entry
                  `etc2/evil` written through it
  climb           a relative symlink `a/b/up -> ../../../etc` (climbs out)
  hardlink-out    a hard link to `../../etc/passwd`
  bad-digest      OCI whose second layer blob is not what its digest says
  bad-diff-id     docker-archive whose layer does not hash to its diff_id
  bad-config      docker-archive whose config's name is not its sha256
"""
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile

MTIME = 1700000000


def entry(name, kind="file", data=b"", link="", mode=0o644, uid=0, gid=0,
          mtime=MTIME):
    return dict(name=name, kind=kind, data=data, link=link, mode=mode,
                uid=uid, gid=gid, mtime=mtime)


def layer_tar(entries):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            info = tarfile.TarInfo(e["name"])
            info.mode = e["mode"]
            info.uid, info.gid = e["uid"], e["gid"]
            info.mtime = e["mtime"]
            data = None
            if e["kind"] == "file":
                info.type = tarfile.REGTYPE
                info.size = len(e["data"])
                data = io.BytesIO(e["data"])
            elif e["kind"] == "dir":
                info.type = tarfile.DIRTYPE
            elif e["kind"] == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = e["link"]
            elif e["kind"] == "hardlink":
                info.type = tarfile.LNKTYPE
                info.linkname = e["link"]
            t.addfile(info, data)
    return out.getvalue()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def config_json(diff_ids, env=None, workdir="", user=""):
    conf = {"Env": env or ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}
    if workdir:
        conf["WorkingDir"] = workdir
    if user:
        conf["User"] = user
    return json.dumps({
        "architecture": "amd64", "os": "linux", "config": conf,
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + d for d in diff_ids]},
    }, sort_keys=True).encode()


def add_file(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = MTIME
    t.addfile(info, io.BytesIO(data))


def compress(raw, how):
    if how == "gzip":
        return gzip.compress(raw, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=raw, check=True,
                              stdout=subprocess.PIPE).stdout
    return raw


def write_oci(out, layers, compression=None, corrupt_layer=None, **conf):
    """layers: raw tars; compression: "gzip", "zstd" or "none" for each
    (default gzip). corrupt_layer: index of a blob whose bytes change
    after its digest is taken."""
    blobs = {}
    descs = []
    for i, raw in enumerate(layers):
        how = compression[i] if compression else "gzip"
        blob = compress(raw, how)
        digest = sha(blob)
        if i == corrupt_layer:
            blob = compress(raw + b"\0" * 1024, how)
        blobs[digest] = blob
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar"
                      + ("" if how == "none" else "+" + how),
                      "digest": "sha256:" + digest, "size": len(blob)})
    config = config_json([sha(r) for r in layers], **conf)
    blobs[sha(config)] = config
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + sha(config), "size": len(config)},
        "layers": descs,
    }).encode()
    blobs[sha(manifest)] = manifest
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": "sha256:" + sha(manifest), "size": len(manifest)}]}).encode()
    with tarfile.open(out, "w") as t:
        add_file(t, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add_file(t, "index.json", index)
        for digest, blob in blobs.items():
            add_file(t, "blobs/sha256/" + digest, blob)


def write_docker(out, layers, bad_diff_id=False, bad_config_name=False,
                 **conf):
    diff_ids = [sha(r) for r in layers]
    if bad_diff_id:
        diff_ids[-1] = sha(b"something else")
    config = config_json(diff_ids, **conf)
    config_name = (sha(b"not the config") if bad_config_name
                   else sha(config)) + ".json"
    names = [sha(r) + ".tar" for r in layers]
    manifest = json.dumps([{"Config": config_name, "RepoTags": ["t:1"],
                            "Layers": names}]).encode()
    with tarfile.open(out, "w") as t:
        for name, raw in zip(names, layers):
            add_file(t, name, raw)
        add_file(t, config_name, config)
        add_file(t, "manifest.json", manifest)


def layers_image(out):
    base = layer_tar([
        entry("etc", "dir", mode=0o755),
        entry("etc/gone", data=b"removed by a whiteout\n"),
        entry("etc/kept", data=b"kept\n"),
        entry("opaque", "dir", mode=0o755),
        entry("opaque/old1", data=b"old\n"),
        entry("opaque/sub", "dir", mode=0o755),
        entry("opaque/sub/old2", data=b"old\n"),
        entry("data", "dir", mode=0o750, uid=1234, gid=2345),
        entry("data/owned", data=b"owned\n", mode=0o640, uid=1234, gid=2345),
        entry("bin", "dir", mode=0o755),
        entry("bin/tool", data=b"#!/bin/sh\n", mode=0o4755),
        entry("replaced", data=b"a file in layer 1\n"),
    ])
    middle = layer_tar([
        entry("etc", "dir", mode=0o755),
        entry("etc/.wh.gone"),
        entry("opaque", "dir", mode=0o755),
        entry("opaque/new", data=b"new\n"),
        entry("opaque/sub/fresh", data=b"new\n"),
        entry("opaque/.wh..wh..opq"),
        entry("bin", "dir", mode=0o755),
        entry("bin/hard", "hardlink", link="bin/tool"),
        entry("replaced", "dir", mode=0o700),
    ])
    top = layer_tar([
        entry("lib64", "dir", mode=0o755),
        entry("lib64/ld.so", "symlink", link="/lib/x86_64-linux-gnu/ld.so"),
        entry("bin", "dir", mode=0o755),
        entry("bin/rel", "symlink", link="../etc/kept"),
        entry("stamp", data=b"t\n", mtime=1234567890),
    ])
    # Each layer compressed its own way: gzip, zstd (where the zstd tool
    # is), none.
    zstd = "zstd" if shutil.which("zstd") else "gzip"
    write_oci(out, [base, middle, top], compression=["gzip", zstd, "none"])


def busybox_image(out):
    with open("/bin/busybox", "rb") as f:
        busybox = f.read()
    tools = ["sh", "echo", "pwd", "cat", "id", "env", "ls", "sleep", "true",
             "printenv", "stat"]
    entries = [entry("bin", "dir", mode=0o755),
               entry("bin/busybox", data=busybox, mode=0o755)]
    entries += [entry("bin/" + t, "symlink", link="busybox") for t in tools]
    entries += [
        entry("etc", "dir", mode=0o755),
        entry("etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n"
              b"app:x:1001:1002:app:/home/app:/bin/sh\n"),
        entry("etc/group", data=b"root:x:0:\napp:x:1002:\n"),
    ]
    write_docker(out, [layer_tar(entries)],
                 env=["PATH=/bin", "GREETING=hi"], workdir="/work", user="app")


def one_bad_layer(out, entries):
    good = layer_tar([entry("etc", "dir", mode=0o755),
                      entry("etc/hostname", data=b"x\n")])
    write_docker(out, [good, layer_tar(entries)])


def main():
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "layers":
        layers_image(out)
    elif kind == "busybox":
        busybox_image(out)
    elif kind == "dotdot":
        one_bad_layer(out, [entry("../escaped", data=b"x\n")])
    elif kind == "through-symlink":
        one_bad_layer(out, [entry("etc2", "symlink", link="/etc"),
                            entry("etc2/evil", data=b"x\n")])
    elif kind == "climb":
        one_bad_layer(out, [entry("a", "dir", mode=0o755),
                            entry("a/b", "dir", mode=0o755),
                            entry("a/b/up", "symlink", link="../../../etc")])
    elif kind == "hardlink-out":
        one_bad_layer(out, [entry("x", "hardlink", link="../../etc/passwd")])
    elif kind == "bad-digest":
        raw = [layer_tar([entry("a", data=b"a\n")]),
               layer_tar([entry("b", data=b"b\n")])]
        write_oci(out, raw, corrupt_layer=1)
    elif kind == "bad-diff-id":
        write_docker(out, [layer_tar([entry("a", data=b"a\n")])],
                     bad_diff_id=True)
    elif kind == "bad-config":
        write_docker(out, [layer_tar([entry("a", data=b"a\n")])],
                     bad_config_name=True)
    else:
        sys.exit("template-image.py: unknown kind " + kind)


if __name__ == "__main__":
    main()
