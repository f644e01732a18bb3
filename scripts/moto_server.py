"""moto_server with requests handled one at a time.

moto applies a TransactWriteItems call item by item and, when one condition fails, restores a copy
of the whole table taken before the call. Two concurrent requests can therefore undo each other's
writes, which real DynamoDB never does: its transactions are isolated. Holding one lock around
every request gives the emulator that isolation, so the concurrency tests exercise our optimistic
writes and not moto's races. Requests still arrive concurrently and interleave between calls.

moto also copies the table once per item of a transaction (not once per table), so a transaction
of four items copies the table four times, and the copies grow with the table and its stream
records: a long test slows quadratically. Each table is copied once per transaction here, which is
what moto's rollback needs (every copy is taken before any item is applied).

Usage: python scripts/moto_server.py HOST PORT
"""

import copy as _copy
import sys
import threading
import types

import moto.dynamodb.models as _models
from moto.dynamodb.models.table import Table as _Table

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

_lock = threading.Lock()

# The copies taken during the transaction being applied (requests are serialised by _lock).
_copies = None


class _CopyOncePerTransaction(types.ModuleType):
    def __getattr__(self, name):
        return getattr(_copy, name)

    def deepcopy(self, x, memo=None):
        if _copies is None or memo is not None:
            return _copy.deepcopy(x, memo)
        if id(x) not in _copies:
            _copies[id(x)] = (x, _table_copy(x) if isinstance(x, _Table) else _copy.deepcopy(x))
        return _copies[id(x)][1]


def _table_copy(table):
    """A table's rollback copy: its items deep, its stream's records as a list of the same records
    (a record never changes once added, and every write adds one, so copying them deeply made
    each transaction cost the whole history of the table)."""
    shard = table.stream_shard
    table.stream_shard = None
    try:
        copied = _copy.deepcopy(table)
    finally:
        table.stream_shard = shard
    if shard is not None:
        snapshot = _copy.copy(shard)
        snapshot.table = copied
        snapshot.items = list(shard.items)
        copied.stream_shard = snapshot
    return copied


_models.copy = _CopyOncePerTransaction("copy")
_transact = _models.DynamoDBBackend.transact_write_items


def _transact_write_items(self, transact_items):
    global _copies
    _copies = {}
    try:
        return _transact(self, transact_items)
    finally:
        _copies = None


_models.DynamoDBBackend.transact_write_items = _transact_write_items
_app = DomainDispatcherApplication(create_backend_app)


def serialized(environ, start_response):
    with _lock:
        # Materialise the body inside the lock: the work happens while iterating.
        return list(_app(environ, start_response))


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, serialized, threaded=True)
