"""wait/watching's feed when the API server does not answer a watch: it tries again, then gives the
group up to polling (``failed`` with no error), instead of its thread dying on the answer's status."""

from __future__ import annotations

import queue
import time

import pytest
from applyset.errors import ApiError, ConnectionFailed
from applyset.kube.discovery import Resource
from applyset.wait import watching

PODS = Resource("", "v1", "Pod", "pods", True)


@pytest.fixture
def no_pause(monkeypatch):
    monkeypatch.setattr(watching, "_BACKOFF", (0.0,))


def feed_after(monkeypatch, error: ApiError) -> tuple[list, queue.Queue]:
    """A feed whose every watch is refused with ``error``, run to its end; the watches it opened."""
    opened = []

    def refuse(client, req, read_timeout):
        opened.append(req)
        raise error

    monkeypatch.setattr(watching, "open_watch", refuse)
    out: queue.Queue = queue.Queue()
    feed = watching._Feed(object(), (PODS, "shop"), "10", None, False, time.monotonic() + 30, out)
    feed.run()  # in this thread: an exception would fail the test
    return opened, out


def test_a_watch_that_gets_no_answer_is_tried_again_then_left_to_polling(monkeypatch, no_pause):
    opened, out = feed_after(monkeypatch, ConnectionFailed("connection refused"))
    assert len(opened) == watching._MAX_FAILURES
    assert out.get_nowait() == ("failed", (PODS, "shop"), None)


def test_a_watch_refused_for_good_fails_at_once(monkeypatch, no_pause):
    refused = ApiError("the server does not allow this method", status=405)
    opened, out = feed_after(monkeypatch, refused)
    assert len(opened) == 1
    assert out.get_nowait() == ("failed", (PODS, "shop"), refused)
