#!/usr/bin/env python3
"""The wire matrix (make test-browser): what a script cannot borrow from a browser.

`vigil serve --demo` serves HTTPS with a certificate made here (openssl), so that it reads every
connection's TLS ClientHello (JA4) and each request's HTTP version and header order. First a
person's Chromium (Debian's, under Xvfb, nothing attached) records its collect body on a page of
this script's own. Then scripts post that recorded body, with the person's own Chrome user agent
and a valid session token from the demo page: curl over HTTP/1.1 and HTTP/2, Python requests and
httpx, Go net/http (built here from Debian's golang) and Node's fetch. Each must score >= 0.9
with tls_fingerprint_mismatch. As a control, the same body posted over plain HTTP (no wire)
scores as the person it was recorded from. Also Python aiohttp and Java's java.net.http (JDK 17).
People: Chromium (certificate errors ignored) and
Firefox ESR (certificate trusted in its profile with NSS's certutil) visit the HTTPS demo page and
must score < 0.5 with no wire reason. One line per client with its JA4.

`--capture FILE` runs the same clients and writes the fingerprint table the engine reads
(data/wire-fingerprints.tsv; `make wire-data`), without judging any score.
"""

import argparse
import datetime
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo  # noqa: E402
from demo import CHROMIUM, FIREFOX, FIREFOX_PREFS, PERSON_CHROMIUM_ARGS, QUIET, ROOT, Display  # noqa: E402

CACHE = ROOT / ".cache" / "wire"
WIRE_REASONS = {"tls_fingerprint_mismatch", "http_fingerprint_mismatch"}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def make_certificate(tmp):
    """A test CA and a server certificate it signs for localhost and 127.0.0.1 (Firefox trusts
    a server's certificate through a CA in its profile, never a self-signed one by itself).
    Returns the server's certificate, its key and the CA's certificate."""
    d = Path(tmp)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                  "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")
    for cmd in (
        ["openssl", "req", "-x509", *ec, "-keyout", d / "ca.key", "-out", d / "ca.pem", "-days", "2",
         "-subj", "/CN=Vigil wire test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign"],
        ["openssl", "req", *ec, "-keyout", d / "key.pem", "-out", d / "server.csr", "-subj", "/CN=localhost"],
        ["openssl", "x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.pem", "-CAkey", d / "ca.key",
         "-CAcreateserial", "-days", "2", "-out", d / "cert.pem", "-extfile", d / "server.ext"],
    ):
        out = run([str(c) for c in cmd])
        assert out.returncode == 0, out.stderr
    return d / "cert.pem", d / "key.pem", d / "ca.pem"


class Server(demo.Server):
    """`vigil serve --demo` on a fresh SQLite database, over HTTPS (`tls`) or plain HTTP."""

    def __init__(self, tmp, name, tls=None):
        super().__init__(tmp, ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])] if tls else [], f"{name}.db")

    @property
    def origin(self):
        return f"{self.scheme}://localhost:{self.port}"

    def session_page(self, session):
        """What a scraper reads off the shop's page: the public key and a session token."""
        html = self.get(f"/demo?session={session}")
        key = re.search(r'publicKey: "([^"]+)"', html).group(1)
        token = re.search(r'sessionToken: "([^"]+)"', html).group(1)
        return key, token

    def wait_event(self, session, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            event = self.latest_event(session)
            if event:
                return event
            time.sleep(0.3)
        raise AssertionError(f"the visit of {session} never arrived")



RECORD_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>shop</title>
<script src="/agent.js"></script></head><body><p>A shop's page.</p><script>
addEventListener("load", function () {
  Vigil.collect({ publicKey: "pk_record", sessionId: "recorded", endpoint: "/record" });
});
</script></body></html>"""


def record_person_body(server, tmp, display):
    """A person's Chromium (nothing attached) opens a page that hands its agent's collect body to
    this script: the body a scraper would record and replay."""
    agent = server.get("/v1/agent.js").encode()
    got = {}

    class Recorder(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            body, kind = (agent, "text/javascript") if self.path == "/agent.js" else (RECORD_PAGE.encode(), "text/html")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            got["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            got["user_agent"] = self.headers["User-Agent"]
            self.send_response(202)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data":{"id":"recorded"}}')

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    chromium = subprocess.Popen([CHROMIUM, *QUIET, *PERSON_CHROMIUM_ARGS, f"--user-data-dir={tmp}/recorder",
                                 "--window-size=1280,900", f"http://localhost:{httpd.server_port}/shop"],
                                env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while "body" not in got and time.time() < deadline:
            time.sleep(0.2)
    finally:
        chromium.kill()
        chromium.wait()
        httpd.shutdown()
    assert "body" in got, "the person's Chromium sent no collect body"
    return got["body"], got["user_agent"]


def go_client(tmp):
    """Go's net/http client, built from the test's source with Debian's golang."""
    out_dir = CACHE / "go"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / "client"
    source = Path(__file__).resolve().parent / "wire" / "client.go"
    env = dict(os.environ, GOCACHE=str(out_dir / "cache"), GOPATH=str(out_dir / "path"), GOFLAGS="-mod=mod",
               GO111MODULE="off", GOTOOLCHAIN="local")
    out = run(["go", "build", "-o", str(binary), str(source)], env=env, cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr
    version = run(["go", "version"]).stdout.split()[2].removeprefix("go")
    return binary, version


def library_clients(tmp):
    """Each script client: (name, stack label for the table, how it posts BODYFILE)."""
    python = sys.executable
    curl_version = run(["curl", "--version"]).stdout.split()[1]
    node_version = run(["node", "--version"]).stdout.strip().lstrip("v")
    go, go_version = go_client(tmp)
    import aiohttp
    import httpx
    import requests
    post_py = ("import sys, {lib}; url, body, ua, origin = sys.argv[1:5]; "
               "h = {{'User-Agent': ua, 'Origin': origin, 'Content-Type': 'text/plain;charset=UTF-8'}}; "
               "r = {lib}.post(url, content=open(body, 'rb').read(), headers=h, verify=False) if '{lib}' == 'httpx' "
               "else {lib}.post(url, data=open(body, 'rb').read(), headers=h, verify=False); print(r.status_code, r.text)")
    post_aiohttp = ("import asyncio, sys, aiohttp; url, body, ua, origin = sys.argv[1:5]\n"
                    "async def main():\n"
                    "    h = {'User-Agent': ua, 'Origin': origin, 'Content-Type': 'text/plain;charset=UTF-8'}\n"
                    "    async with aiohttp.ClientSession() as s:\n"
                    "        async with s.post(url, data=open(body, 'rb').read(), headers=h, ssl=False) as r:\n"
                    "            print(r.status, await r.text())\n"
                    "asyncio.run(main())\n")
    java_version = run(["java", "-version"]).stderr.split('"')[1]
    java = Path(__file__).resolve().parent / "wire" / "Client.java"
    node = ("const [url, body, ua, origin] = process.argv.slice(1);"
            "fetch(url, {method: 'POST', body: require('fs').readFileSync(body), headers: {'User-Agent': ua,"
            " 'Origin': origin, 'Content-Type': 'text/plain;charset=UTF-8'}})"
            ".then(r => r.text().then(t => console.log(r.status, t)))"
            ".catch(e => { console.error(e); process.exit(1); });")
    curl = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: text/plain;charset=UTF-8"]
    return [
        ("curl-http1.1", f"curl {curl_version} (OpenSSL 3)",
         lambda url, body, ua, origin: curl + ["--http1.1", "-A", ua, "-H", f"Origin: {origin}",
                                                "--data-binary", f"@{body}", url]),
        ("curl-http2", f"curl {curl_version} (OpenSSL 3)",
         lambda url, body, ua, origin: curl + ["--http2", "-A", ua, "-H", f"Origin: {origin}",
                                                "--data-binary", f"@{body}", url]),
        ("python-requests", f"Python requests {requests.__version__} (urllib3, OpenSSL 3)",
         lambda url, body, ua, origin: [python, "-W", "ignore", "-c", post_py.format(lib="requests"),
                                        url, body, ua, origin]),
        ("python-httpx", f"Python httpx {httpx.__version__} (OpenSSL 3)",
         lambda url, body, ua, origin: [python, "-W", "ignore", "-c", post_py.format(lib="httpx"),
                                        url, body, ua, origin]),
        ("python-aiohttp", f"Python aiohttp {aiohttp.__version__} (OpenSSL 3)",
         lambda url, body, ua, origin: [python, "-W", "ignore", "-c", post_aiohttp, url, body, ua, origin]),
        ("java-httpclient", f"Java {java_version} java.net.http",
         lambda url, body, ua, origin: ["java", str(java), url, body, ua, origin]),
        ("go-net-http", f"Go {go_version} net/http",
         lambda url, body, ua, origin: [str(go), url, body, ua, origin]),
        ("node-fetch", f"Node {node_version} fetch (undici)",
         lambda url, body, ua, origin: ["node", "-e", node, url, body, ua, origin]),
    ]


def replay(server, tmp, name, recorded, user_agent, command):
    """A script posts the recorded body for a fresh session with its token; returns the event."""
    session = f"{name}-{uuid.uuid4().hex[:8]}"
    public_key, token = server.session_page(session)
    body = dict(recorded, publicKey=public_key, sessionId=session, sessionToken=token)
    path = Path(tmp) / f"{session}.json"
    path.write_text(json.dumps(body))
    out = run(command(f"{server.origin.replace('localhost', '127.0.0.1')}/v1/collect", str(path), user_agent,
                      server.origin),
              env=dict(os.environ, NODE_TLS_REJECT_UNAUTHORIZED="0", NODE_NO_WARNINGS="1"))
    assert out.returncode == 0 and out.stdout.startswith("202"), f"{name}: {out.stdout[-300:]} {out.stderr[-500:]}"
    return server.wait_event(session)


def browse_until_event(server, session, cmd, display):
    """A browser started as a person starts it, until the visit's event arrives."""
    proc = subprocess.Popen(cmd, env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return server.wait_event(session)
    finally:
        proc.kill()
        proc.wait()


def chromium_person(server, tmp, display, name="person-chromium"):
    session = f"{name}-{uuid.uuid4().hex[:8]}"
    return browse_until_event(server, session, [
        CHROMIUM, *QUIET, *PERSON_CHROMIUM_ARGS, "--ignore-certificate-errors", f"--user-data-dir={tmp}/{session}",
        "--window-size=1280,900", f"{server.origin}/demo?session={session}"], display)


def firefox_person(server, tmp, display, ca):
    session = f"person-firefox-{uuid.uuid4().hex[:8]}"
    profile = Path(tmp) / session
    profile.mkdir()
    (profile / "user.js").write_text(FIREFOX_PREFS)
    for cmd in (["certutil", "-N", "-d", f"sql:{profile}", "--empty-password"],
                ["certutil", "-A", "-d", f"sql:{profile}", "-n", "vigil-test-ca", "-t", "C,,", "-i", str(ca)]):
        out = run(cmd)
        assert out.returncode == 0, out.stderr
    return browse_until_event(server, session, [
        FIREFOX, "--no-remote", "--profile", str(profile), "--width", "1280", "--height", "900",
        f"{server.origin}/demo?session={session}"], display)


def codes(event):
    return [r["code"] for r in event["reasons"]]


def browser_label(binary):
    out = run([binary, "--version"]).stdout.strip()
    m = re.search(r"(Chromium|Firefox) ([\d.]+)(esr)?", out)
    return f"{m.group(1)} {m.group(2).split('.')[0]}{' ESR' if m.group(3) else ''} (Debian)" if m else binary


def capture(path):
    """Writes the table of this machine's clients' JA4 fingerprints."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Display() as display:
        tls = make_certificate(tmp)
        server = Server(tmp, "capture", tls)
        try:
            recorded, user_agent = record_person_body(server, tmp, display)
            for stack, label, visit in (
                ("chromium", browser_label(CHROMIUM), lambda: chromium_person(server, tmp, display)),
                ("firefox", browser_label(FIREFOX), lambda: firefox_person(server, tmp, display, tls[2])),
            ):
                rows.append((visit()["ja4"], stack, label))
            for name, label, command in library_clients(tmp):
                rows.append((replay(server, tmp, name, recorded, user_agent, command)["ja4"], "library", label))
        finally:
            server.stop()
    today = datetime.date.today().isoformat()
    # Clients that send the same ClientHello share a line, named together.
    merged = {}
    for ja4, stack, label in rows:
        assert ja4, f"no JA4 recorded for {label}"
        labels = merged.setdefault((ja4, stack), [])
        if label not in labels:
            labels.append(label)
    lines = [f"# ja4\tstack\tclient: captured on Debian 12 by tests/browser/wire.py --capture, {today}"]
    lines += [f"{ja4}\t{stack}\t{' or '.join(labels)}" for (ja4, stack), labels in merged.items()]
    Path(path).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def matrix():
    failures, passed = [], 0

    def judge(kind, name, event, ok, extra=""):
        nonlocal passed
        score = event["scoreBot"]
        print(f"{kind:7} {name:22} scoreBot={score:<6} {'ok  ' if ok else 'FAIL'} ja4={event.get('ja4')} "
              f"reasons={codes(event)}{extra}", flush=True)
        if ok:
            passed += 1
        else:
            failures.append(f"{name}: scoreBot {score} with {codes(event)}")

    with tempfile.TemporaryDirectory() as tmp, Display() as display:
        tls = make_certificate(tmp)
        server = Server(tmp, "wire", tls)
        plain = Server(tmp, "plain")
        try:
            recorded, user_agent = record_person_body(server, tmp, display)
            print(f"recorded a person's collect body from {user_agent}", flush=True)
            clients = library_clients(tmp)
            # The control: over plain HTTP there is no wire, and the recorded body passes for the
            # person it was recorded from. The wire is what tells the script apart.
            control = replay(plain, tmp, "control-plain-http", recorded, user_agent, clients[2][2])
            judge("control", "python-requests-http", control, control["scoreBot"] < 0.5 and not control["ja4"],
                  " (plain HTTP: no wire)")
            for name, _, command in clients:
                try:
                    event = replay(server, tmp, name, recorded, user_agent, command)
                except AssertionError as e:
                    failures.append(str(e))
                    print(f"bot     {name:22} FAILED ({e})", flush=True)
                    continue
                tls_reason = next((r["detail"] for r in event["reasons"] if r["code"] == "tls_fingerprint_mismatch"), None)
                judge("bot", name, event, event["scoreBot"] >= 0.9 and tls_reason is not None,
                      f" detail={tls_reason!r}")
            for name, visit in (("person-chromium", lambda: chromium_person(server, tmp, display)),
                                ("person-firefox", lambda: firefox_person(server, tmp, display, tls[2]))):
                try:
                    event = visit()
                except AssertionError as e:
                    failures.append(str(e))
                    print(f"person  {name:22} FAILED ({e})", flush=True)
                    continue
                judge("person", name, event, event["scoreBot"] < 0.5 and bool(event["ja4"])
                      and not WIRE_REASONS & set(codes(event)))
        finally:
            server.stop()
            plain.stop()
    print(f"{passed} passed, {len(failures)} failed")
    if failures:
        sys.exit("failed wire profiles:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", metavar="FILE", help="write the fingerprint table instead of judging")
    args = parser.parse_args()
    capture(args.capture) if args.capture else matrix()
