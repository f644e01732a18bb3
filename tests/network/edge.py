#!/usr/bin/env python3
"""The site's own edge: a TLS-terminating reverse proxy in front of `vigil serve`, as nginx or a
load balancer is, which the server trusts (`--trust-proxy`). It ends the visitor's TLS and TCP and
opens its own TLS connection to the server (Python's OpenSSL ClientHello, Linux's SYN, its own
round trip): none of that is the visitor's.

    edge.py LISTEN_PORT CERT KEY UPSTREAM_HOST UPSTREAM_PORT SOURCE

Each request gets `X-Forwarded-For` with the visitor's address. A request to a path under
`/forward/` (stripped before it is passed on) also gets what this edge measured of its visitor,
in the fields Vigil reads from a trusted peer: the JA4 of the visitor's ClientHello, its HTTP
version and its header order (crates/http/src/forwarded.rs). HTTP/1.1, one request per
connection, the body by Content-Length: enough for the lab's clients.

Only the standard library: the lab runs before any virtualenv exists.
"""

import hashlib
import http.client
import socket
import socketserver
import ssl
import struct
import sys

LISTEN, CERT, KEY, UPSTREAM, UPSTREAM_PORT, SOURCE = sys.argv[1:7]
VERSIONS = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3"}


def grease(v):
    return (v & 0x0F0F) == 0x0A0A and (v >> 8) == (v & 0xFF)


def u16s(data):
    return [struct.unpack_from("!H", data, i)[0] for i in range(0, len(data) - 1, 2)]


def sha12(text):
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def ja4(record):
    """FoxIO's JA4 of a TLS record holding a ClientHello (None if it is not one)."""
    if len(record) < 9 or record[0] != 0x16 or record[5] != 0x01:
        return None
    p = 9 + 2 + 32  # record header, handshake header, legacy version, random
    legacy = struct.unpack_from("!H", record, 9)[0]
    p += 1 + record[p]
    (n,) = struct.unpack_from("!H", record, p)
    ciphers = [c for c in u16s(record[p + 2:p + 2 + n]) if not grease(c)]
    p += 2 + n
    p += 1 + record[p]
    (total,) = struct.unpack_from("!H", record, p)
    p, end = p + 2, p + 2 + total
    types, sni, alpn, versions, sigalgs = [], False, None, None, []
    while p + 4 <= end:
        kind, length = struct.unpack_from("!HH", record, p)
        body = record[p + 4:p + 4 + length]
        p += 4 + length
        if grease(kind):
            continue
        types.append(kind)
        if kind == 0x0000:
            sni = True
        elif kind == 0x0010 and len(body) > 3:
            alpn = body[3:3 + body[2]]
        elif kind == 0x002B and body:
            versions = max((v for v in u16s(body[1:1 + body[0]]) if not grease(v)), default=None)
        elif kind == 0x000D and len(body) >= 2:
            sigalgs = [s for s in u16s(body[2:2 + struct.unpack_from("!H", body)[0]]) if not grease(s)]
    version = VERSIONS.get(versions or legacy, "00")
    if alpn:
        first, last = chr(alpn[0]), chr(alpn[-1])
        a_lpn = first + last if first.isalnum() and last.isalnum() else f"{alpn[0]:02x}"[0] + f"{alpn[-1]:02x}"[1]
    else:
        a_lpn = "00"
    a = f"t{version}{'d' if sni else 'i'}{min(len(ciphers), 99):02}{min(len(types), 99):02}{a_lpn}"
    b = sha12(",".join(f"{c:04x}" for c in sorted(ciphers)))
    c = ",".join(f"{t:04x}" for t in sorted(t for t in types if t not in (0x0000, 0x0010)))
    if sigalgs:
        c += "_" + ",".join(f"{s:04x}" for s in sigalgs)
    return f"{a}_{b}_{sha12(c)}"


def peek_hello(sock):
    """The visitor's first TLS record, read without taking it off the socket."""
    data = b""
    for _ in range(50):
        data = sock.recv(16384 + 5, socket.MSG_PEEK)
        if len(data) >= 5 and len(data) >= 5 + struct.unpack_from("!H", data, 3)[0]:
            break
        sock.settimeout(0.1)
    sock.settimeout(20)
    return data


class Edge(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        raw = self.request
        raw.settimeout(20)
        fingerprint = ja4(peek_hello(raw))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(CERT, KEY)
        ctx.set_alpn_protocols(["http/1.1"])
        conn = ctx.wrap_socket(raw, server_side=True)
        f = conn.makefile("rb")
        line = f.readline().decode("latin-1").rstrip("\r\n")
        method, path, version = line.split(" ", 2)
        headers = []
        while (h := f.readline().decode("latin-1").rstrip("\r\n")):
            name, value = h.split(":", 1)
            headers.append((name.strip(), value.strip()))
        length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
        body = f.read(length) if length else None
        out = {k: v for k, v in headers if k.lower() not in ("host", "content-length", "connection")}
        out["X-Forwarded-For"] = self.client_address[0]
        if path.startswith("/forward/"):
            path = path[len("/forward"):]
            if fingerprint:
                out["CloudFront-Viewer-JA4-Fingerprint"] = fingerprint
            out["CloudFront-Viewer-HTTP-Version"] = version.split("/", 1)[-1]
            out["CloudFront-Viewer-Header-Order"] = ":".join(k for k, _ in headers)
        up = http.client.HTTPSConnection(UPSTREAM, int(UPSTREAM_PORT), timeout=20,
                                         source_address=(SOURCE, 0),
                                         context=ssl._create_unverified_context())
        up.request(method, path, body=body, headers=out)
        r = up.getresponse()
        answer = r.read()
        conn.sendall(f"HTTP/1.1 {r.status} {r.reason}\r\nContent-Length: {len(answer)}\r\n"
                     f"Content-Type: {r.getheader('content-type', 'text/plain')}\r\n"
                     f"Connection: close\r\n\r\n".encode() + answer)
        up.close()
        conn.close()


if __name__ == "__main__":
    server = Edge(("0.0.0.0", int(LISTEN)), Handler)
    print("edge ready", flush=True)
    server.serve_forever()
