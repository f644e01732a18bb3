#!/usr/bin/env python3
"""A Python visitor (the standard library's HTTP/1.1 client and OpenSSL): posts one collect body
directly, through an HTTP CONNECT proxy or through a SOCKS5 proxy, as a scraper's script would.

    client.py URL BODYFILE USER_AGENT ORIGIN [http|socks5 PROXY_HOST PROXY_PORT]
"""

import http.client
import socket
import ssl
import struct
import sys
from urllib.parse import urlsplit


def socks5_connect(proxy, port, host, target_port):
    """A TCP connection to host:target_port through a SOCKS5 proxy (no authentication; the
    proxy resolves the name, as socks5h clients let it)."""
    s = socket.create_connection((proxy, port), timeout=20)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00", "the SOCKS5 proxy refused"
    name = host.encode()
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", target_port))
    reply = s.recv(10)
    assert reply[:2] == b"\x05\x00", f"the SOCKS5 proxy answered {reply!r}"
    return s


def main():
    url, body_file, ua, origin, *proxy = sys.argv[1:]
    u = urlsplit(url)
    body = open(body_file, "rb").read()
    headers = {"User-Agent": ua, "Origin": origin, "Content-Type": "text/plain;charset=UTF-8"}
    insecure = ssl._create_unverified_context()
    if proxy and proxy[0] == "http":
        conn = http.client.HTTPSConnection(proxy[1], int(proxy[2]), context=insecure, timeout=20)
        conn.set_tunnel(u.hostname, u.port)
    else:
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=insecure, timeout=20)
        if proxy:
            raw = socks5_connect(proxy[1], int(proxy[2]), u.hostname, u.port)
            conn.sock = insecure.wrap_socket(raw, server_hostname=u.hostname)
    conn.request("POST", u.path, body=body, headers=headers)
    r = conn.getresponse()
    print(r.status, r.read().decode())


if __name__ == "__main__":
    main()
