"""moto_server with requests handled one at a time.

moto applies a TransactWriteItems call item by item and, when one condition fails, restores a copy
of the whole table taken before the call. Two concurrent requests can therefore undo each other's
writes, which real DynamoDB never does: its transactions are isolated. Holding one lock around
every request gives the emulator that isolation, so the concurrency tests exercise our optimistic
writes and not moto's races. Requests still arrive concurrently and interleave between calls.

Usage: python scripts/moto_server.py HOST PORT
"""

import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

_lock = threading.Lock()
_app = DomainDispatcherApplication(create_backend_app)


def serialized(environ, start_response):
    with _lock:
        # Materialise the body inside the lock: the work happens while iterating.
        return list(_app(environ, start_response))


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, serialized, threaded=True)
