#!/usr/bin/env python3
"""The exit's relays: an HTTP CONNECT proxy and a SOCKS5 proxy (RFC 1928, no authentication),
as a residential proxy network's exit node runs them. Each ends the client's TCP connection and
opens its own to the target, so the server sees the exit's TCP stack and round trip.

    proxy.py HTTP_PORT SOCKS_PORT [SOURCE,SOURCE,...]

With SOURCEs, each outgoing connection leaves from the next of them in turn: a rotating pool.

Only the standard library: the lab runs before any virtualenv exists.
"""

import asyncio
import itertools
import ipaddress
import socket
import struct
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


SOURCES = itertools.cycle([None])


async def splice(client_r, client_w, host, port, answer_ok, answer_fail):
    source = next(SOURCES)
    try:
        up_r, up_w = await asyncio.open_connection(host, port, local_addr=(source, 0) if source else None)
    except OSError:
        client_w.write(answer_fail)
        await client_w.drain()
        client_w.close()
        return
    up_w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client_w.write(answer_ok)
    await client_w.drain()
    await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))


async def http_connect(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
    if method != "CONNECT":
        writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        writer.close()
        return
    host, port = target.rsplit(":", 1)
    await splice(reader, writer, host.strip("[]"), int(port),
                 b"HTTP/1.1 200 Connection established\r\n\r\n", b"HTTP/1.1 502 Bad Gateway\r\n\r\n")


async def socks5(reader, writer):
    version, count = await reader.readexactly(2)
    await reader.readexactly(count)
    if version != 5:
        writer.close()
        return
    writer.write(b"\x05\x00")
    _, command, _, kind = await reader.readexactly(4)
    if kind == 1:
        host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif kind == 4:
        host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    else:
        (length,) = await reader.readexactly(1)
        host = (await reader.readexactly(length)).decode()
    (port,) = struct.unpack("!H", await reader.readexactly(2))
    if command != 1:
        writer.write(b"\x05\x07\x00\x01" + bytes(6))
        writer.close()
        return
    await splice(reader, writer, host, port, b"\x05\x00\x00\x01" + bytes(6), b"\x05\x05\x00\x01" + bytes(6))


async def main(http_port, socks_port):
    a = await asyncio.start_server(http_connect, "0.0.0.0", http_port)
    b = await asyncio.start_server(socks5, "0.0.0.0", socks_port)
    print("proxies ready", flush=True)
    async with a, b:
        await asyncio.gather(a.serve_forever(), b.serve_forever())


if __name__ == "__main__":
    if len(sys.argv) > 3:
        SOURCES = itertools.cycle(sys.argv[3].split(","))
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
