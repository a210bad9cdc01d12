"""How many requests the client keeps in flight, and how many round trips a run waited for.

``AdaptiveLimit`` follows the round trip. On a slow link a request spends its time on the wire,
not in the server, so more requests in flight carry more work per round trip; on loopback the
server's CPU is the limit and more in flight only queues. The limit therefore starts at
``start`` (8) and, in slow start, doubles after each window of as many answers as the limit
while the window's mean latency stays within ``QUEUE_FACTOR`` of the smallest latency seen (the
round trip, judged on the window's faster quarter: the requests are not queueing, so throughput
grows with the limit), up to ``ceiling``. A link a region away shows itself in the first
answers: while every answer so far took at least ``SLOW_LINK`` (20 ms; loopback and a data
centre answer a small GET in a few), slow start jumps to ``LINK_START`` (64, within the ceiling)
after ``LINK_EVIDENCE`` answers instead of doubling one round trip at a time, and goes back to
where it was if a faster answer shows the link near after all (a loaded server, not a far one);
the windows judge the rest as usual. A window whose latency shows a queue ends slow start and
takes one back (never below ``start``). The server's own signals take precedence: a 429
(priority and fairness rejections included) or 503 halves the limit (down to 1), ends slow
start, and a ``Retry-After`` holds every new request until it has passed; after that the limit
grows back by one per window of successes.

``CriticalPath`` counts the round trips a run waited for one after another: each request gets
the depth of the deepest request answered before it was sent, plus one, and the path is the
deepest depth. Requests sent together share a depth; a request sent after another's answer may
depend on it and counts one more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The user's parallelism, when given, is the hard upper limit; without it, at most this many.
DEFAULT_START = 8
DEFAULT_CEILING = 64
# A window whose mean latency exceeds the smallest latency by this factor is queueing in the server.
QUEUE_FACTOR = 3.0
# The longest pause a Retry-After may impose on every request (seconds).
MAX_HOLD = 10.0
# A link whose smallest latency is at least this long (seconds) is a link a region away: there a
# request spends its time on the wire, not in the server, and slow start jumps to LINK_START.
SLOW_LINK = 0.02
LINK_START = 64
# Answers that must all have taken SLOW_LINK before the jump (discovery, the parent, a LIST).
LINK_EVIDENCE = 3


def bounds(parallelism: int | None) -> tuple[int, int]:
    """``(start, ceiling)`` for the user's ``parallelism`` option: None follows the round trip from
    8 up to 64; a number is the hard upper limit (starting at 8 or below)."""
    if parallelism is None:
        return DEFAULT_START, DEFAULT_CEILING
    ceiling = max(1, int(parallelism))
    return min(DEFAULT_START, ceiling), ceiling


class AdaptiveLimit:
    """The number of requests allowed in flight (see the module): ``limit`` moves between 1 and
    ``ceiling``. Used as a context manager around each request: entering waits for a free slot
    (and for a ``Retry-After`` to pass); ``answered`` reports each answer's latency and whether
    the server pushed back."""

    def __init__(self, ceiling: int, start: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = max(1, ceiling)
        self.start = min(self.ceiling, max(1, start if start is not None else self.ceiling))
        self.limit = self.start
        self.peak = self.low = self.start
        self.pushbacks = 0
        self.min_latency: float | None = None
        self._clock = clock
        self._slow_start = self.start < self.ceiling
        self._answers = 0
        self._before_jump: int | None = None  # the limit before the jump to LINK_START
        self._in_flight = 0
        self._window: list[float] = []
        self._full = False  # did the limit bind during this window (a request waited, or all slots taken)
        self._hold_until = 0.0
        self._cond = threading.Condition()

    def __enter__(self) -> AdaptiveLimit:
        with self._cond:
            while True:
                hold = self._hold_until - self._clock()
                if hold > 0:
                    self._cond.wait(hold)
                    continue
                if self._in_flight < self.limit:
                    break
                self._full = True
                self._cond.wait()
            self._in_flight += 1
            if self._in_flight >= self.limit:
                self._full = True
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._in_flight -= 1
            # One slot freed: one waiter woken. Waking every waiter (a map keeps up to the ceiling's
            # worth of threads, 64, waiting on a limit of 8 on loopback) made each answer wake dozens
            # of threads that found no slot and slept again: about 1 ms of system CPU per request.
            self._cond.notify()

    @property
    def slow_link(self) -> bool:
        """Whether every answer so far took at least ``SLOW_LINK``: a link a region away."""
        return self.min_latency is not None and self.min_latency >= SLOW_LINK

    def pushed_back(self, retry_after: float | None = None) -> None:
        """The server answered 429 or 503: halve the limit (never below 1), stop growing fast, and
        hold new requests for ``retry_after`` seconds when the server said so."""
        with self._cond:
            self.limit = max(1, self.limit // 2)
            self._before_jump = None  # what the server says outranks what the link suggested
            self.low = min(self.low, self.limit)
            self.pushbacks += 1
            self._slow_start = False
            self._window.clear()
            self._full = False
            if retry_after:
                self._hold_until = max(self._hold_until, self._clock() + min(MAX_HOLD, retry_after))

    def succeeded(self, latency: float | None = None) -> None:
        """Any other answer, ``latency`` seconds after it was sent (None: not measured)."""
        with self._cond:
            if latency is not None and (self.min_latency is None or latency < self.min_latency):
                self.min_latency = latency
            self._answers += 1
            self._follow_link()
            self._window.append(latency if latency is not None else 0.0)
            if len(self._window) < self.limit:
                return
            self._judge_window()
            self._window.clear()
            self._full = False
            self.peak = max(self.peak, self.limit)
            self._cond.notify_all()

    def _follow_link(self) -> None:
        """Jump to LINK_START on a link a region away, and back if it proves near (see the module)."""
        if self._before_jump is not None and not self.slow_link:
            self.limit, self._before_jump = self._before_jump, None
        elif (self._slow_start and self._before_jump is None and self.limit < LINK_START and self.slow_link
              and self._answers >= LINK_EVIDENCE):
            # Every answer so far took a round trip of the wire: fill the link at once instead of
            # doubling one round trip at a time (the server's 429s still halve it).
            self._before_jump = self.limit
            self.limit = min(self.ceiling, LINK_START)
            self.peak = max(self.peak, self.limit)
            self._cond.notify_all()

    def _judge_window(self) -> None:
        if self.limit >= self.ceiling and not self._slow_start:
            return
        # The faster quarter: requests that opened a new connection (a TLS handshake, two more
        # round trips) do not count as queueing; a server that queues slows them all.
        typical = sorted(self._window)[len(self._window) // 4]
        queueing = self.min_latency is not None and typical > QUEUE_FACTOR * self.min_latency
        if not self._slow_start:
            if self.limit < self.start or not queueing:
                self.limit = min(self.ceiling, self.limit + 1)
            return
        if queueing:
            self._slow_start = False
            self.limit = max(self.start, self.limit - 1)
        elif self._full:
            self.limit = min(self.ceiling, self.limit * 2)


class CriticalPath:
    """The round trips a run waited for one after another (see the module)."""

    def __init__(self) -> None:
        self._answered_depth = 0
        self.depth = 0
        self._lock = threading.Lock()

    def sent(self) -> int:
        """A request goes out: its depth."""
        with self._lock:
            return self._answered_depth + 1

    def answered(self, depth: int) -> None:
        """The request of ``depth`` was answered (or failed)."""
        with self._lock:
            self._answered_depth = max(self._answered_depth, depth)
            self.depth = max(self.depth, depth)
