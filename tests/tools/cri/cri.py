#!/usr/bin/python3
"""A CRI client for tests: one call of the runtime.v1 API, as a kubelet
makes it, to a CRI server (containerd's CRI plugin) on a unix socket.

    cri.py [--endpoint unix:///run/containerd/containerd.sock]
           [--timeout SECONDS] METHOD [REQUEST_JSON | -]

METHOD is a method of RuntimeService or ImageService ("RunPodSandbox",
"ImageStatus", or "ImageService/ImageStatus" in full). The request is JSON
in the protobuf mapping (field names as in api.proto or in lowerCamelCase;
int64 as a number or a string; bytes in base64; "-" reads it from stdin;
none sends an empty request). The response is printed as JSON with the
names of api.proto and every field, unset ones with their default value.
Exit status 0; on an error of the call, one line on stderr
"cri.py: METHOD: CODE: details" and exit status 1; 2 for a bad command
line or request.

The message classes are generated from api.proto beside this file with
`protoc --python_out`, once, into $TMPDIR/brig-cri-<hash of api.proto>/.
Calls go through grpc's generic unary_unary: no generated service stubs,
no grpc_tools. Needs Debian's python3-grpcio, python3-protobuf and
protobuf-compiler (hence /usr/bin/python3 above, whatever python3 comes
first on PATH).
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

PROG = "cri.py"
HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "api.proto")
PACKAGE = "runtime.v1"
SERVICES = ("RuntimeService", "ImageService")


def die(msg, status=1):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(status)


def generated_module():
    """api_pb2, generated into the cache directory unless already there."""
    with open(PROTO, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    tmp = os.environ.get("TMPDIR") or tempfile.gettempdir()
    cache = os.path.join(tmp, "brig-cri-" + digest)
    module = os.path.join(cache, "api_pb2.py")
    # Code imported from a shared temporary directory: only from one of
    # ours that nobody else can write to.
    try:
        st = os.lstat(cache)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            die("%s is not a private directory of this user's: remove it" % cache)
    except FileNotFoundError:
        pass
    if not os.path.exists(module):
        protoc = shutil.which("protoc")
        if protoc is None:
            die("protoc is not installed (apt-get install protobuf-compiler)")
        # Generated aside and renamed into place: concurrent first runs
        # each make their own, one of them wins, none sees half a file.
        work = tempfile.mkdtemp(prefix="brig-cri-gen.", dir=tmp)
        try:
            res = subprocess.run(
                [protoc, "--proto_path=" + HERE, "--python_out=" + work, PROTO],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
            if res.returncode != 0:
                die("protoc failed on %s: %s" % (PROTO, res.stdout.decode(errors="replace").strip()))
            try:
                os.rename(work, cache)
            except OSError:
                if not os.path.exists(module):
                    raise
        finally:
            if os.path.isdir(work):
                shutil.rmtree(work, ignore_errors=True)
    spec = importlib.util.spec_from_file_location("api_pb2", module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def find_method(pb, name):
    """(full gRPC path, input class, output class) of METHOD."""
    services = pb.DESCRIPTOR.services_by_name
    if "/" in name:
        svc, _, meth = name.partition("/")
        candidates = [svc] if svc in services else []
    else:
        meth = name
        candidates = [s for s in SERVICES if s in services]
    for svc in candidates:
        m = services[svc].methods_by_name.get(meth)
        if m is not None:
            return ("/%s.%s/%s" % (PACKAGE, svc, meth),
                    getattr(pb, m.input_type.name), getattr(pb, m.output_type.name))
    known = sorted(m for s in SERVICES if s in services for m in services[s].methods_by_name)
    die("%s: no such method (known: %s)" % (name, " ".join(known)), 2)
    return None


def to_json(msg):
    from google.protobuf import json_format
    try:
        return json_format.MessageToJson(msg, preserving_proto_field_name=True,
                                         including_default_value_fields=True, indent=2)
    except TypeError:  # protobuf >= 26 renamed the option
        return json_format.MessageToJson(msg, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True, indent=2)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="One call of the CRI runtime.v1 API.")
    ap.add_argument("--endpoint", default=os.environ.get(
        "CONTAINER_RUNTIME_ENDPOINT", "unix:///run/containerd/containerd.sock"),
        help="the CRI server, unix:///path/to.sock (default: $CONTAINER_RUNTIME_ENDPOINT "
        "or containerd's socket)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="deadline of the call in seconds (default 60)")
    ap.add_argument("method", metavar="METHOD")
    ap.add_argument("request", metavar="JSON", nargs="?", default="{}",
                    help="the request as JSON, '-' for stdin (default {})")
    args = ap.parse_args()

    try:
        import grpc
        from google.protobuf import json_format
    except ImportError as e:
        die("%s (apt-get install python3-grpcio python3-protobuf)" % e)

    pb = generated_module()
    path, req_cls, resp_cls = find_method(pb, args.method)

    text = sys.stdin.read() if args.request == "-" else args.request
    try:
        req = json_format.ParseDict(json.loads(text or "{}"), req_cls())
    except (ValueError, json_format.ParseError) as e:
        die("%s: bad request: %s" % (args.method, " ".join(str(e).split())), 2)

    endpoint = args.endpoint
    if endpoint.startswith("/"):
        endpoint = "unix://" + endpoint
    with grpc.insecure_channel(endpoint, options=[
            ("grpc.max_receive_message_length", 16 << 20)]) as channel:
        call = channel.unary_unary(path, request_serializer=req_cls.SerializeToString,
                                   response_deserializer=resp_cls.FromString)
        try:
            resp = call(req, timeout=args.timeout)
        except grpc.RpcError as e:
            details = (e.details() or "").replace("\n", " ")
            die("%s: %s: %s" % (args.method, e.code().name, details))
    sys.stdout.write(to_json(resp) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
