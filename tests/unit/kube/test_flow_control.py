"""flow.py: the requests in flight follow the round trip, back off on 429/503 and Retry-After, and
the critical path counts the round trips waited for one after another.

The limit's rules are driven directly with made-up latencies and a fake clock; the client's use
of them is checked with the urllib3 pool replaced by a stub (no server). The same behaviour
against a real API server's priority and fairness: tests/integration/test_priority_fairness.py.
"""

import json
import threading
import time
from types import SimpleNamespace

from applyset.kube import flow, client as kube


def answer(limit: flow.AdaptiveLimit, latencies):
    """Send and answer one request per latency, as many at once as the limit allows."""
    for latency in latencies:
        with limit:
            limit.succeeded(latency)


def fill(limit: flow.AdaptiveLimit, latency: float):
    """One window with every slot taken: as many requests in flight as the limit, then answered."""
    n = limit.limit
    for _ in range(n):
        limit.__enter__()
    for _ in range(n):
        limit.__exit__(None, None, None)
        limit.succeeded(latency)


def test_bounds_follow_the_parallelism_option():
    assert flow.bounds(None) == (8, 64)  # not set: from 8, up to 64
    assert flow.bounds(8) == (8, 8)  # the behaviour before: exactly 8
    assert flow.bounds(32) == (8, 32)
    assert flow.bounds(1) == (1, 1)  # one request at a time


def test_slow_start_doubles_while_the_latency_stays_at_the_round_trip_up_to_the_ceiling():
    limit = flow.AdaptiveLimit(64, 8)
    seen = []
    for _ in range(5):
        fill(limit, 0.010)  # 10 ms, window after window: the link, not the server, is the limit
        seen.append(limit.limit)
    assert seen == [16, 32, 64, 64, 64]
    assert limit.peak == 64


def test_a_link_a_region_away_fills_at_once_from_its_first_answer():
    limit = flow.AdaptiveLimit(64, 8)
    answer(limit, [0.050, 0.051])  # discovery, 50 ms away: every request spends its time on the wire
    assert limit.slow_link and limit.limit == 8  # not on two answers
    answer(limit, [0.052])  # the parent
    assert limit.limit == 64 and limit.peak == 64
    capped = flow.AdaptiveLimit(16, 8)  # parallelism: 16 stays the hard limit
    answer(capped, [0.050] * 3)
    assert capped.limit == 16
    near = flow.AdaptiveLimit(64, 8)
    answer(near, [0.050] * 3 + [0.002])  # then an answer in 2 ms: the link is near, the server was slow
    assert not near.slow_link and near.limit == 8  # back to where it was
    loopback = flow.AdaptiveLimit(64, 8)
    answer(loopback, [0.002, 0.030, 0.030, 0.030])
    assert loopback.limit == 8  # never jumps once the link showed itself near


def test_a_server_that_pushed_back_is_not_filled_at_once_on_a_slow_link():
    limit = flow.AdaptiveLimit(64, 8)
    limit.pushed_back()
    answer(limit, [0.050] * 3)
    assert limit.limit == 4


def test_no_growth_while_the_limit_does_not_bind():
    limit = flow.AdaptiveLimit(64, 8)
    answer(limit, [0.010] * 40)  # one request at a time: more slots would not help
    assert limit.limit == 8


def test_a_queueing_server_ends_slow_start_and_the_limit_never_falls_below_the_start():
    limit = flow.AdaptiveLimit(64, 8)
    answer(limit, [0.002])  # a small GET: the round trip on loopback
    fill(limit, 0.002)
    assert limit.limit == 16
    fill(limit, 0.020)  # ten times the round trip: requests wait in the server
    assert limit.limit == 15
    for _ in range(5):
        fill(limit, 0.020)
    assert limit.limit == 15  # no more growth while it queues
    slow = flow.AdaptiveLimit(64, 8)
    answer(slow, [0.002])
    fill(slow, 0.020)
    assert slow.limit == 8  # never below the start on latency alone: loopback is as fast as before


def test_new_connections_in_a_window_are_not_mistaken_for_a_queue():
    limit = flow.AdaptiveLimit(64, 8)
    answer(limit, [0.050])
    for _ in range(3):  # half of each window opened a new connection (TLS: two more round trips)
        n = limit.limit
        for _ in range(n):
            limit.__enter__()
        for k in range(n):
            limit.__exit__(None, None, None)
            limit.succeeded(0.150 if k % 2 else 0.050)
    assert limit.limit == 64


def test_429_halves_ends_slow_start_and_grows_back_by_one_per_window():
    limit = flow.AdaptiveLimit(64, 8)
    fill(limit, 0.01)
    fill(limit, 0.01)
    assert limit.limit == 32
    limit.pushed_back()
    assert limit.limit == 16 and limit.pushbacks == 1
    fill(limit, 0.01)
    assert limit.limit == 17  # additive from now on
    for _ in range(5):
        limit.pushed_back()
    assert limit.limit == 1  # never below one request


def test_retry_after_holds_every_new_request_until_it_has_passed():
    now = [100.0]
    limit = flow.AdaptiveLimit(8, 8, clock=lambda: now[0])
    limit.pushed_back(retry_after=2.0)
    entered = threading.Event()

    def send():
        with limit:
            entered.set()

    worker = threading.Thread(target=send)
    worker.start()
    assert not entered.wait(0.2)  # held: the server asked for 2 s
    now[0] += 2.5
    with limit._cond:
        limit._cond.notify_all()
    assert entered.wait(2)
    worker.join()


def test_a_retry_after_longer_than_the_cap_holds_at_most_the_cap():
    now = [0.0]
    limit = flow.AdaptiveLimit(8, 8, clock=lambda: now[0])
    limit.pushed_back(retry_after=3600)
    assert limit._hold_until == flow.MAX_HOLD


# ----- the client's use of it (urllib3 replaced by a stub) -------------------------------------


class SlowPool:
    """Answers every request after ``delay`` seconds: ``statuses`` first, then 200."""

    def __init__(self, delay=0.0, statuses=(), headers=None):
        self.delay, self.statuses, self.headers = delay, list(statuses), headers or {}
        self.sent_at = []
        self._lock = threading.Lock()

    def request(self, method, url, **_):
        import urllib3

        with self._lock:
            self.sent_at.append(time.monotonic())
            status = self.statuses.pop(0) if self.statuses else 200
        time.sleep(self.delay)
        hdrs = urllib3.HTTPHeaderDict(self.headers if status == 429 else {})
        return SimpleNamespace(status=status, data=json.dumps({"kind": "Status"}).encode(), headers=hdrs)


def client(pool, parallelism=None):
    cfg = SimpleNamespace(host="https://k8s.test:6443", verify_ssl=True, ssl_ca_cert=None, cert_file=None,
                          key_file=None, proxy=None, no_proxy=None, proxy_headers=None, tls_server_name=None,
                          refresh_api_key_hook=None, get_api_key_with_prefix=lambda *a, **k: "Bearer x")
    c = kube.KubeClient(cfg, parallelism=parallelism, retry_seconds=5)
    c._pool = pool
    return c


def test_the_client_waits_out_retry_after_then_sends_again_with_half_the_requests_in_flight():
    pool = SlowPool(statuses=[429], headers={"Retry-After": "1"})
    c = client(pool)
    started = time.monotonic()
    assert c.request("GET", "/x").status == 200
    assert time.monotonic() - started >= 1.0
    assert pool.sent_at[1] - pool.sent_at[0] >= 1.0
    assert c.flow.pushbacks == 1 and c.flow.limit == 4  # 8 halved, then growing by one per window
    assert c.requests_sent == 2


def test_the_client_grows_its_requests_in_flight_on_a_slow_link_and_counts_the_round_trips():
    pool = SlowPool(delay=0.05)  # every answer takes a 50 ms round trip
    c = client(pool)
    assert c.parallelism == 64 and c.flow.limit == 8
    c.map(lambda i: c.request("GET", f"/x/{i}"), range(200))
    assert c.flow.peak >= 32  # 8, 16, 32 (64) while the latency stays at the round trip
    # 200 requests: 8 + 16 + 32 + 64 + ... each wave one round trip, not 200 / 8 = 25
    assert c.round_trips <= 8, c.round_trips


def test_an_explicit_parallelism_is_a_hard_upper_limit():
    c = client(SlowPool(delay=0.02), parallelism=4)
    in_flight, most = [0], [0]
    lock = threading.Lock()
    original = c._pool.request

    def counting(*a, **k):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            return original(*a, **k)
        finally:
            with lock:
                in_flight[0] -= 1

    c._pool.request = counting
    c.map(lambda i: c.request("GET", f"/x/{i}"), range(40))
    assert most[0] == 4 and c.flow.peak == 4


def test_requests_one_after_another_count_one_round_trip_each_and_together_once():
    c = client(SlowPool(delay=0.05))
    c.request("GET", "/a")
    c.request("GET", "/b")
    assert c.round_trips == 2
    # Sent together: one more. The answers wait until all six are out, so a thread that a loaded
    # machine starts late is still sent before the first answer (CI once counted 4 with a plain
    # 50 ms delay: one request left after another was answered, which is a real second trip).
    together = threading.Barrier(6)
    answer_after_50ms = c._pool.request

    def answer_once_all_are_out(*a, **k):
        together.wait(timeout=30)
        return answer_after_50ms(*a, **k)

    c._pool.request = answer_once_all_are_out
    c.map(lambda i: c.request("GET", f"/c/{i}"), range(6))
    assert c.round_trips == 3


def test_a_freed_slot_wakes_one_waiting_request_not_every_one():
    """A map keeps up to the ceiling's worth of threads waiting on a smaller limit (64 threads, 8
    slots on loopback): each answer must wake one of them, not all (a herd of wake-ups that find no
    slot cost about 1 ms of system CPU per request)."""
    limit = flow.AdaptiveLimit(16, 1)
    wakeups = []

    class CountingCondition(threading.Condition):
        def wait(self, timeout=None):
            woke = super().wait(timeout)
            wakeups.append(woke)
            return woke

    limit._cond = CountingCondition()  # pylint: disable=protected-access
    holder_in, go = threading.Event(), threading.Event()

    def hold():
        with limit:
            holder_in.set()
            go.wait(5)

    def one_request():
        with limit:
            time.sleep(0.01)  # an answer takes a while: the others are still waiting when it ends

    holder = threading.Thread(target=hold)
    holder.start()
    holder_in.wait(5)
    waiters = [threading.Thread(target=one_request) for _ in range(12)]
    for thread in waiters:
        thread.start()
    deadline = time.monotonic() + 5
    while len(limit._cond._waiters) < 12 and time.monotonic() < deadline:  # pylint: disable=protected-access
        time.sleep(0.01)
    go.set()
    for thread in [holder, *waiters]:
        thread.join(5)
    assert limit._in_flight == 0  # pylint: disable=protected-access
    assert len(wakeups) == 12, len(wakeups)  # each waiter woken once, when its turn came (all woken: 78)
