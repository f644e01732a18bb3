#!/usr/bin/env python3
"""A Lambda function's init, measured as Lambda sees it: from the process's start to its first
call for an invocation on the Runtime API (a mock served here), with its DynamoDB connection
warmed against the emulator (moto), as a cold start does.

Compares `collect` (the detection engine built at init, beside the warming) with `get-plan` (no
engine) in one run, interleaved, and prints each one's median and p90 and the difference of the
medians, with each binary's size. Fails if any start does not reach the Runtime API.

Usage (release builds, moto from the test virtualenv):
  cargo build --release --locked --bin collect --bin get-plan
  scripts/with-moto.sh .cache/venv-test python3 benches/cold_start.py [RUNS]
"""

import http.server
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
BINARIES = ["get-plan", "collect"]
TARGET = os.path.join(os.path.dirname(__file__), "..", "target", "release")

first_call = threading.Event()
release = threading.Event()


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    """The Runtime API's `next`: noted, then held until the run is over (no event is given)."""

    def do_GET(self):
        if self.path.endswith("/runtime/invocation/next"):
            first_call.set()
            release.wait(10)
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    endpoint = os.environ.get("VIGIL_TEST_DYNAMODB_ENDPOINT")
    if not endpoint:
        sys.exit("run under scripts/with-moto.sh (VIGIL_TEST_DYNAMODB_ENDPOINT is not set)")
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), RuntimeApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(
        os.environ,
        AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{port}",
        AWS_LAMBDA_FUNCTION_NAME="cold-start-bench",
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1024",
        AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
        AWS_ENDPOINT_URL=endpoint,
        VIGIL_TABLE="vigil-cold-start",
        RUST_LOG="error",
    )
    times = {b: [] for b in BINARIES}
    for b in BINARIES:
        if not os.path.exists(os.path.join(TARGET, b)):
            sys.exit(f"target/release/{b} is missing: cargo build --release --bin {b}")
    for run in range(RUNS + 1):
        for b in BINARIES:
            first_call.clear()
            release.clear()
            start = time.perf_counter()
            proc = subprocess.Popen(
                [os.path.join(TARGET, b)], env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            reached = first_call.wait(10)
            elapsed = time.perf_counter() - start
            release.set()
            proc.kill()
            proc.wait()
            if not reached:
                sys.exit(f"{b} did not reach the Runtime API within 10 s (exit {proc.returncode})")
            if run > 0:  # the first round warms the page cache and the emulator
                times[b].append(elapsed * 1000)
    server.shutdown()
    print(f"init to the first Runtime API call, {RUNS} starts each, interleaved (ms):")
    for b in BINARIES:
        t = sorted(times[b])
        size = os.path.getsize(os.path.join(TARGET, b))
        p90 = t[min(len(t) - 1, int(len(t) * 0.9))]
        print(f"  {b:<9} median {statistics.median(t):6.2f}  p90 {p90:6.2f}  "
              f"binary {size:,} bytes")
    diff = statistics.median(times["collect"]) - statistics.median(times["get-plan"])
    print(f"collect - get-plan, medians: {diff:+.2f} ms")


if __name__ == "__main__":
    main()
