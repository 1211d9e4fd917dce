#!/usr/bin/env python3
"""A client for the API of `brig serve` (docs/api.md), on Python's
standard library alone: copy this file next to your code.

    from brig_client import Brig, BrigError

    brig = Brig("unix:/run/brig/api.sock", token_file="/etc/brig/api.token")
    brig.create("s1", memory="512M", network="none", idle_timeout="15m")
    out, err, code = brig.run("s1", ["python3", "-c", "print(2 + 2)"])   # "4\\n", "", 0
    for event in brig.exec("s1", ["sh", "-c", "echo a; sleep 1; echo b"]):
        print(event)              # {'stdout': 'a\\n'}, a second later {'stdout': 'b\\n'}, {'exit': 0}
    brig.session_start("s1", "py", ["python3", "-q", "-i"])
    brig.session_input("s1", "py", "x = 41\\n")
    answer = brig.session_input("s1", "py", "print(x + 1)\\n", wait=5, until=r"^42\\r?$")
    brig.put_file("s1", "data.csv", b"a,b\\n1,2\\n")
    brig.get_file("s1", "data.csv"), brig.list_files("s1")
    brig.remove("s1")

Brig() without arguments reads BRIG_API_ADDR (default
unix:/run/brig/api.sock; also tcp:HOST:PORT or http://HOST:PORT) and
BRIG_API_TOKEN or BRIG_API_TOKEN_FILE.
An error answer raises BrigError, with the HTTP status and the server's
line. One connection per call, so a Brig may be shared between threads.

As a program, for scripts and a quick look:

    python3 brig_client.py ls
    python3 brig_client.py create s1 memory=512M network=none
    python3 brig_client.py exec s1 -- python3 -c 'print(2 + 2)'     # exits with its status
    python3 brig_client.py put s1 data.csv <data.csv
    python3 brig_client.py cat s1 chart.svg >chart.svg
    python3 brig_client.py rm s1
"""

import argparse
import http.client
import json
import os
import socket
import sys
import urllib.parse

DEFAULT_API = "unix:/run/brig/api.sock"


class BrigError(Exception):
    """An error answer: `status` (None when the stream was cut) and the
    server's one line, `message`."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message) if status else message)
        self.status = status
        self.message = message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def _q(part):
    return urllib.parse.quote(part, safe="")


def _file_url(sandbox, path):
    if path.startswith("/mnt/data/"):
        path = path[len("/mnt/data/"):]
    return "/v1/sandboxes/%s/files/%s" % (_q(sandbox), urllib.parse.quote(path, safe="/"))


def _fields(**fields):
    return {k: v for k, v in fields.items() if v is not None}


class Brig:
    def __init__(self, address=None, token=None, token_file=None, timeout=None):
        """address: unix:PATH, tcp:HOST:PORT or http://HOST:PORT; token
        (or the first line of token_file); timeout: seconds a socket
        operation may block (None: for ever, as a long exec needs)."""
        address = address or os.environ.get("BRIG_API_ADDR") or DEFAULT_API
        if token is None:
            token = os.environ.get("BRIG_API_TOKEN")
        token_file = token_file or (None if token else os.environ.get("BRIG_API_TOKEN_FILE"))
        if token_file:
            with open(token_file) as f:
                token = f.readline().strip()
        self.token = token
        self.timeout = timeout
        if address.startswith("unix:"):
            self._unix = address[len("unix:"):]
        elif address.startswith("/"):
            self._unix = address
        else:
            self._unix = None
            hostport = address.split("://", 1)[-1].rstrip("/")
            if hostport.startswith("tcp:"):
                hostport = hostport[len("tcp:"):]
            host, _, port = hostport.rpartition(":")
            self._host, self._port = host.strip("[]"), int(port)

    # ---- HTTP ----

    def _connection(self):
        if self._unix:
            return _UnixConnection(self._unix, self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _send(self, method, path, body=None, query=None, headers=None):
        """The answer of a request that succeeded, still to be read, with
        its connection; an error answer raises BrigError."""
        conn = self._connection()
        hdrs = {"Authorization": "Bearer " + self.token} if self.token else {}
        if isinstance(body, dict):
            body = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        if query:
            path += "?" + urllib.parse.urlencode(_fields(**query))
        try:
            conn.request(method, path, body=body, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError) as e:
            # The server may answer (413) before it has taken the whole body.
            try:
                resp = conn.getresponse()
            except Exception:
                conn.close()
                raise e from None
        else:
            resp = conn.getresponse()
        if resp.status >= 400:
            data = resp.read()
            conn.close()
            try:
                message = json.loads(data)["error"]
            except (ValueError, KeyError, TypeError):
                message = data.decode("utf-8", "replace").strip() or resp.reason
            raise BrigError(resp.status, message)
        return conn, resp

    def _call(self, method, path, body=None, query=None):
        conn, resp = self._send(method, path, body, query)
        try:
            data = resp.read()
        finally:
            conn.close()
        return json.loads(data) if data else None

    # ---- sandboxes ----

    def create(self, id, **fields):
        """fields: memory, pids, cpus, data_size, network, ttl,
        idle_timeout, exec_timeout (docs/api.md). The sandbox object."""
        return self._call("POST", "/v1/sandboxes", _fields(id=id, **fields))

    def list(self):
        return self._call("GET", "/v1/sandboxes")["sandboxes"]

    def get(self, id):
        return self._call("GET", "/v1/sandboxes/" + _q(id))

    def remove(self, id):
        self._call("DELETE", "/v1/sandboxes/" + _q(id))

    # ---- exec ----

    def exec(self, id, cmd, env=None, cwd=None, user=None, timeout=None, stdin=None):
        """Yields the events as they come: {"stdout": text}, {"stderr":
        text}, and last {"exit": N} (with "timeout": True after a
        timeout). An error event, or a stream cut short, raises BrigError."""
        body = _fields(cmd=list(cmd), env=env, cwd=cwd, user=user, timeout=timeout, stdin=stdin)
        conn, resp = self._send("POST", "/v1/sandboxes/%s/exec" % _q(id), body)
        try:
            while True:
                line = resp.readline()
                if not line:
                    raise BrigError(None, "exec: the stream ended before the command's exit")
                if not line.strip():
                    continue
                event = json.loads(line)
                if "error" in event:
                    raise BrigError(500, event["error"])
                yield event
                if "exit" in event:
                    return
        finally:
            conn.close()

    def run(self, id, cmd, **options):
        """exec to its end: (stdout, stderr, exit status); 124 after a timeout."""
        out, err, status = [], [], None
        for event in self.exec(id, cmd, **options):
            if "stdout" in event:
                out.append(event["stdout"])
            elif "stderr" in event:
                err.append(event["stderr"])
            elif "exit" in event:
                status = event["exit"]
        return "".join(out), "".join(err), status

    # ---- sessions ----

    def session_start(self, id, name, cmd=None, cwd=None, env=None, user=None):
        """A session on a terminal (default cmd: bash -i). {"name", "pid", "cmd", "alive"}."""
        body = _fields(name=name, cmd=list(cmd) if cmd else None, cwd=cwd, env=env, user=user)
        return self._call("POST", "/v1/sandboxes/%s/sessions" % _q(id), body)

    def session_input(self, id, name, chars, wait=None, until=None):
        """Types chars ("\\n" Enter, "\\x03" Ctrl-C), then answers what the
        session wrote: {"output", "dropped", "alive", "exit"}, once it was
        quiet for `wait` seconds (0.5) or its output matched `until`."""
        body = _fields(chars=chars, wait=wait, until=until)
        return self._call("POST", "/v1/sandboxes/%s/sessions/%s/input" % (_q(id), _q(name)), body)

    def session_read(self, id, name, wait=None, until=None):
        """What the session wrote since the last answer, without typing."""
        path = "/v1/sandboxes/%s/sessions/%s" % (_q(id), _q(name))
        return self._call("GET", path, query={"wait": wait, "until": until})

    def session_kill(self, id, name):
        self._call("DELETE", "/v1/sandboxes/%s/sessions/%s" % (_q(id), _q(name)))

    def sessions(self, id):
        return self._call("GET", "/v1/sandboxes/%s/sessions" % _q(id))["sessions"]

    # ---- files ----

    def put_file(self, id, path, data):
        """data (bytes, str, or a binary file) into /mnt/data/path: {"path", "size"}."""
        headers = {"Content-Type": "application/octet-stream"}
        if isinstance(data, str):
            data = data.encode()
        if isinstance(data, (bytes, bytearray)):
            headers["Content-Length"] = str(len(data))
        else:
            headers["Content-Length"] = str(os.fstat(data.fileno()).st_size - data.tell())
        conn, resp = self._send("PUT", _file_url(id, path), data, headers=headers)
        try:
            return json.loads(resp.read())
        finally:
            conn.close()

    def get_file(self, id, path):
        """The bytes of /mnt/data/path."""
        conn, resp = self._send("GET", _file_url(id, path))
        try:
            return resp.read()
        finally:
            conn.close()

    def list_files(self, id, path=""):
        """The entries of a directory of /mnt/data: [{"name", "type", "size", "mtime"}]."""
        path = path.rstrip("/") + "/" if path.strip("/") else ""
        return self._call("GET", _file_url(id, path))["entries"]

    def download(self, id, url, path):
        """The host fetches url into /mnt/data/path: {"path", "size"}."""
        return self._call("POST", "/v1/sandboxes/%s/download" % _q(id), {"url": url, "path": path})


# ---- the program ----


def _value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def _main(argv):
    p = argparse.ArgumentParser(description="Drive brig serve's API (docs/api.md).")
    p.add_argument("--api", help="unix:PATH, tcp:HOST:PORT or http://HOST:PORT (BRIG_API_ADDR)")
    p.add_argument("--token-file", help="the token's file (BRIG_API_TOKEN_FILE)")
    sub = p.add_subparsers(dest="verb", required=True)
    sub.add_parser("ls", help="list the sandboxes, one JSON object a line")
    for verb in ("get", "rm"):
        sub.add_parser(verb).add_argument("id")
    c = sub.add_parser("create", help="create ID [FIELD=VALUE...]")
    c.add_argument("id")
    c.add_argument("fields", nargs="*")
    e = sub.add_parser("exec", help="exec ID -- CMD...: exits with its status")
    e.add_argument("--timeout", type=float)
    e.add_argument("--cwd")
    e.add_argument("-e", "--env", action="append", default=[])
    e.add_argument("id")
    e.add_argument("cmd", nargs="+")
    for verb in ("put", "cat", "files"):
        f = sub.add_parser(verb)
        f.add_argument("id")
        f.add_argument("path", nargs="?" if verb == "files" else None, default="")
    a = p.parse_args(argv)
    brig = Brig(a.api, token_file=a.token_file)
    if a.verb == "ls":
        for sandbox in brig.list():
            print(json.dumps(sandbox))
    elif a.verb == "get":
        print(json.dumps(brig.get(a.id)))
    elif a.verb == "rm":
        brig.remove(a.id)
    elif a.verb == "create":
        fields = dict(f.split("=", 1) for f in a.fields)
        print(json.dumps(brig.create(a.id, **{k: _value(v) for k, v in fields.items()})))
    elif a.verb == "exec":
        env = dict(kv.split("=", 1) for kv in a.env) or None
        for event in brig.exec(a.id, a.cmd, env=env, cwd=a.cwd, timeout=a.timeout):
            for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
                if name in event:
                    stream.write(event[name])
                    stream.flush()
            if "exit" in event:
                return event["exit"]
    elif a.verb == "put":
        print(json.dumps(brig.put_file(a.id, a.path, sys.stdin.buffer.read())))
    elif a.verb == "cat":
        sys.stdout.buffer.write(brig.get_file(a.id, a.path))
    elif a.verb == "files":
        for entry in brig.list_files(a.id, a.path):
            print(json.dumps(entry))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_main(sys.argv[1:]))
    except BrigError as err:
        print("brig_client: %s" % err, file=sys.stderr)
        sys.exit(1)
