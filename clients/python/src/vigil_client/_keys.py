"""The project's keys for the framework helpers: read once, shared, bounded, failing briefly.

What a request waits for is chosen, not accidental:

- one read at a time (single-flight): concurrent requests wait for the read under way instead
  of each making its own, and no lock is held while anything waits on the network;
- every wait ends by the read's deadline (``timeout``, 2 s by default) whatever the API does;
- a success is kept for the process's life (the keys change only by rotation), a failure only
  for ``retry_interval`` (1 s by default): meanwhile requests fail at once, then one reads again.

The loaders return the keys or the exception (never raise it), so that one failure can be
handed to many requests without re-raising a shared exception object.
"""

from __future__ import annotations

import inspect
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Optional, TypeVar, Union

import anyio
import anyio.to_thread

from ._session import ProjectKeys
from .errors import VigilConnectionError, VigilTimeoutError

#: The longest a request waits for the project's keys (seconds).
DEFAULT_TIMEOUT = 2.0
#: After a failed read, requests fail at once for this long before one reads again (seconds).
DEFAULT_RETRY_INTERVAL = 1.0

Outcome = Union[ProjectKeys, Exception]
T = TypeVar("T")
F = TypeVar("F")


def check_timing(timeout: object, retry_interval: object) -> None:
    """Refuses a timeout that is not a positive number of seconds, or a negative interval."""
    for name, value, zero_ok in (("timeout", timeout, False), ("retry_interval", retry_interval, True)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ValueError(f"{name} must be a number of seconds, not {value!r}")
        if value < 0 or (value == 0 and not zero_ok) or value == float("inf"):
            raise ValueError(f"{name} must be {'0 or more' if zero_ok else 'more than 0'} seconds")


def _timed_out(timeout: float) -> VigilTimeoutError:
    return VigilTimeoutError(f"no project keys from Vigil within {timeout:g} s")


@dataclass
class _Attempt:
    deadline: float
    #: Set when the read ends (either way); waiters also stop at ``deadline``.
    finished: Any
    error: Optional[Exception] = None
    retry_at: float = 0.0
    running: bool = True


class _Keys(Generic[F]):
    """What both loaders keep: the read (`fetch`), its bounds, the keys once read and the last
    attempt."""

    def __init__(
        self,
        fetch: F,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> None:
        check_timing(timeout, retry_interval)
        self.fetch = fetch
        self.timeout = float(timeout)
        self.retry_interval = float(retry_interval)
        self._keys: Optional[ProjectKeys] = None
        self._attempt: Optional[_Attempt] = None


class ThreadedKeys(_Keys[Callable[[], ProjectKeys]]):
    """For threaded servers (Django under WSGI): the read runs in a thread of its own, so every
    request, the first included, waits at most until the read's deadline."""

    def __init__(
        self,
        fetch: Callable[[], ProjectKeys],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> None:
        super().__init__(fetch, timeout=timeout, retry_interval=retry_interval)
        self._lock = threading.Lock()

    def get(self) -> Outcome:
        with self._lock:  # held for bookkeeping only, never across a wait
            if self._keys is not None:
                return self._keys
            now = time.monotonic()
            attempt = self._attempt
            if attempt is not None and attempt.error is not None:
                # Failed: at once for the interval, and while a timed-out read still runs.
                if now < attempt.retry_at or attempt.running:
                    return attempt.error
                attempt = None
            if attempt is None:
                attempt = _Attempt(deadline=now + self.timeout, finished=threading.Event())
                self._attempt = attempt
                threading.Thread(
                    target=self._run, args=(attempt,), name="vigil-project-keys", daemon=True
                ).start()
        attempt.finished.wait(max(0.0, attempt.deadline - time.monotonic()))
        with self._lock:
            if self._keys is not None:
                return self._keys
            if attempt.error is None:  # the deadline passed with the read still under way
                attempt.error = _timed_out(self.timeout)
                attempt.retry_at = attempt.deadline + self.retry_interval
            return attempt.error

    def _run(self, attempt: _Attempt) -> None:
        try:
            keys = self.fetch()
        except Exception as exc:  # noqa: BLE001 - every failure is the helper's on_error's
            with self._lock:
                attempt.running = False
                if attempt.error is None:
                    attempt.error = exc
                    attempt.retry_at = time.monotonic() + self.retry_interval
        else:
            with self._lock:
                attempt.running = False
                self._keys = keys  # kept even if it came after the deadline
        finally:
            attempt.finished.set()


class AsyncKeys(_Keys[Callable[[], Awaitable[ProjectKeys]]]):
    """For async servers (FastAPI): the first request of a round reads, under a cancel scope of
    ``timeout``; the others wait on its event, never past the same deadline."""

    async def get(self) -> Outcome:
        if self._keys is not None:
            return self._keys
        now = time.monotonic()
        attempt = self._attempt
        if attempt is not None and attempt.running:
            with anyio.move_on_after(max(0.0, attempt.deadline - now)):
                await attempt.finished.wait()
            if self._keys is not None:
                return self._keys
            return attempt.error or _timed_out(self.timeout)
        if attempt is not None and attempt.error is not None and now < attempt.retry_at:
            return attempt.error
        attempt = _Attempt(deadline=now + self.timeout, finished=anyio.Event())
        self._attempt = attempt
        try:
            with anyio.fail_after(self.timeout):
                keys = await self.fetch()
        except TimeoutError:  # anyio's deadline (VigilTimeoutError is not a TimeoutError)
            attempt.error = _timed_out(self.timeout)
            attempt.retry_at = time.monotonic() + self.retry_interval
            return attempt.error
        except Exception as exc:  # noqa: BLE001 - every failure is the helper's on_error's
            attempt.error = exc
            attempt.retry_at = time.monotonic() + self.retry_interval
            return exc
        except BaseException:
            # This request was cancelled (the client went away): the others are told, and the
            # next request reads again at once.
            attempt.error = VigilConnectionError("the read of the project's keys was cancelled")
            attempt.retry_at = 0.0
            raise
        else:
            self._keys = keys
            return keys
        finally:
            attempt.running = False
            attempt.finished.set()


async def in_thread(call: Callable[[], T]) -> T:
    """``call()`` in a worker thread, abandoned (left to finish alone) if the caller is cancelled,
    so that a deadline around it holds even for a blocking client."""
    run_sync: Any = anyio.to_thread.run_sync
    parameters = inspect.signature(run_sync).parameters
    # anyio 4.1 renamed `cancellable` to `abandon_on_cancel`.
    flag = "abandon_on_cancel" if "abandon_on_cancel" in parameters else "cancellable"
    result: T = await run_sync(call, **{flag: True})
    return result
