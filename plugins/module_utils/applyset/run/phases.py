"""Where a run's time goes, measured when asked: ``APPLYSET_PHASE_TIMES=FILE``.

Off unless the variable names a file: every hook is then one ``None`` check, and the result, the
output and the requests are the same either way (the times go to the file, never to the result).
On, the module appends one JSON line to FILE as its process exits (``atexit``, so that the result's
own shaping and printing are counted): ``benchmarks/phases.py`` reads it.

What the line holds (seconds, wall and CPU; CPU counts every thread of the process):

* ``laps``: the module's phases one after the other, as it marks them (``lap``): the first,
  ``module start``, runs from the process's start (the interpreter, the AnsiballZ payload and the
  imports) to the module's ``main``; the last, ``result``, from the end of the run to the exit;
* ``steps``: each step of each route the run took, with its effect (``runner.Step.effect``) and the
  requests and writes it sent (``KubeClient.requests_sent`` and ``writes_sent``);
* ``spans``: time inside named parts of a step (``span``: the hooks, the waits), summed;
* ``requests``, ``writes``: the client's counts at the exit.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import wraps
from typing import Any, Callable, Iterator, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

ENV = "APPLYSET_PHASE_TIMES"


class PhaseTimer:
    """The times of one module process, written to ``path`` as one JSON line by ``write``."""

    def __init__(self, path: str):
        self.path = path
        self.laps: list[list[Any]] = []
        self.steps: list[list[Any]] = []
        self.spans: dict[str, float] = {}
        self.client: Any = None  # the run's client, for the request counts (``watch_client``)
        self._lock = threading.Lock()
        self._wall = time.monotonic()
        self._cpu = time.process_time()
        self._since_start = _process_age()
        # the process's start to now is the first lap, from the start's CPU (always 0) to now's
        self.laps.append(["module start", round(self._since_start, 4), round(self._cpu, 4)])

    def lap(self, name: str) -> None:
        """End the phase ``name``: the time since the previous lap (or the start)."""
        wall, cpu = time.monotonic(), time.process_time()
        self.laps.append([name, round(wall - self._wall, 4), round(cpu - self._cpu, 4)])
        self._wall, self._cpu = wall, cpu

    @contextmanager
    def step(self, name: str, effect: str, client: Any) -> Iterator[None]:
        """Time one step of a route and count what ``client`` sent during it."""
        sent, writes = _counts(client)
        wall, cpu = time.monotonic(), time.process_time()
        try:
            yield
        finally:
            sent_after, writes_after = _counts(client)
            self.steps.append([name, effect, round(time.monotonic() - wall, 4), round(time.process_time() - cpu, 4),
                               sent_after - sent, writes_after - writes])

    @contextmanager
    def span(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to ``spans[name]`` (any thread)."""
        started = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self.spans[name] = round(self.spans.get(name, 0.0) + time.monotonic() - started, 4)

    def record(self) -> dict[str, object]:
        """What ``write`` appends (see the module's docstring)."""
        sent, writes = _counts(self.client)
        return {"pid": os.getpid(), "total": round(self._since_start + sum(lap[1] for lap in self.laps[1:]), 4),
                "cpu": round(time.process_time(), 4), "laps": self.laps, "steps": self.steps, "spans": self.spans,
                "requests": sent, "writes": writes}

    def write(self) -> None:
        """Mark the last lap (``result``) and append the record to the file."""
        self.lap("result")
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(self.record()) + "\n")


_timer: PhaseTimer | None = None


def start_from_env() -> PhaseTimer | None:
    """Start timing this process when ``APPLYSET_PHASE_TIMES`` names a file (and write it at the exit)."""
    global _timer
    path = os.environ.get(ENV)
    if path and _timer is None:
        _timer = PhaseTimer(path)
        atexit.register(_timer.write)
    return _timer


def lap(name: str) -> None:
    """``PhaseTimer.lap`` when timing, else nothing."""
    if _timer is not None:
        _timer.lap(name)


def watch_client(client: Any) -> None:
    """Report ``client``'s request counts in the record (when timing)."""
    if _timer is not None:
        _timer.client = client


def step(name: str, effect: str, client: Any) -> AbstractContextManager:
    """``PhaseTimer.step`` when timing, else a context that does nothing."""
    return _timer.step(name, effect, client) if _timer is not None else nullcontext()


def span(name: str) -> AbstractContextManager:
    """``PhaseTimer.span`` when timing, else a context that does nothing."""
    return _timer.span(name) if _timer is not None else nullcontext()


def spanned(name: str) -> Callable[[_F], _F]:
    """A decorator: each call of the function is a ``span(name)``."""
    def decorate(func: _F) -> _F:
        @wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if _timer is None:
                return func(*args, **kwargs)
            with _timer.span(name):
                return func(*args, **kwargs)
        return timed  # type: ignore[return-value]
    return decorate


def _counts(client: Any) -> tuple[int, int]:
    return getattr(client, "requests_sent", 0), getattr(client, "writes_sent", 0)


def _process_age() -> float:
    """Seconds since this process started (Linux's /proc, to the clock tick); 0 where unknown."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in ticks since boot
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
