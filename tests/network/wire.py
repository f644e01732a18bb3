#!/usr/bin/env python3
"""A delaying wire between TUN devices in network namespaces (this kernel has no netem).

Each link joins two TUN devices, each in its own namespace: a packet the kernel routes out of
one is written into the other after half the link's round trip, give or take its jitter (uniform,
a share of the one-way delay). Packets of one direction leave in the order they came, as on a
real line, so jitter never reorders them.

    wire.py CONFIG       CONFIG: {"links": [{"a": ["ns", "dev"], "b": ["ns", "dev"],
                                             "rttMs": 40, "jitter": 0.1}]}

SIGHUP re-reads the delays of CONFIG (the same links, in the same order). Only the standard
library: the lab runs before any virtualenv exists.
"""

import ctypes
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def enter(ns):
    """Moves this process into namespace `ns` (Python 3.11 has no os.setns)."""
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if LIBC.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
    finally:
        os.close(fd)


def attach(ns, dev):
    """A file descriptor on the persistent TUN device `dev` of namespace `ns`."""
    enter(ns)
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    path = sys.argv[1]
    config = json.load(open(path))
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    # out[fd] = (the other end's fd, the link's index)
    out, delays = {}, []
    for i, link in enumerate(config["links"]):
        a, b = attach(*link["a"]), attach(*link["b"])
        out[a], out[b] = (b, i), (a, i)
        delays.append((link["rttMs"], link.get("jitter", 0.0)))
    LIBC.setns(home, CLONE_NEWNET)

    def reload(*_):
        for i, link in enumerate(json.load(open(path))["links"]):
            delays[i] = (link["rttMs"], link.get("jitter", 0.0))

    signal.signal(signal.SIGHUP, reload)
    queue, last, seq = [], {fd: 0.0 for fd in out}, 0
    print("wire ready", flush=True)
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else None
        try:
            ready, _, _ = select.select(list(out), [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in ready:
            try:
                packet = os.read(fd, 65536)
            except OSError:
                continue
            to, i = out[fd]
            rtt, jitter = delays[i]
            one_way = rtt / 2000.0
            at = max(now + one_way * (1 + random.uniform(-jitter, jitter)), last[to])
            last[to] = at
            seq += 1
            heapq.heappush(queue, (at, seq, to, packet))
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, to, packet = heapq.heappop(queue)
            try:
                os.write(to, packet)
            except OSError:
                pass


if __name__ == "__main__":
    main()
