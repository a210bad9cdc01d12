"""One WATCH stream as it is read: newline-delimited JSON events, closed from any thread.

A watch (``http_requests.watch_request``, sent by ``client.KubeClient.watch``) answers with a
stream of ``{"type": ..., "object": ...}`` lines: ``ADDED``, ``MODIFIED``, ``DELETED`` for the
objects, ``BOOKMARK`` (only the resourceVersion, to resume from) and ``ERROR`` (a ``Status``;
code 410 when the resourceVersion asked for is too old). ``WatchStream`` yields them as
``WatchEvent`` values and ends when the server ends the stream (its ``timeoutSeconds``), when
the connection drops, or when another thread calls ``close`` (the wait is over). Following a
collection across those ends (resuming, re-listing) is ``wait.watching``'s job.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from ..object_meta import KubeObject, list_meta_of, metadata_of
from .api import KubeApi
from .client import LIST_PAGE_SIZE, read_response
from .discovery import Resource
from .http_requests import ApiRequest, ListBody, list_request

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
_READ_SIZE = 65536


@dataclass(frozen=True)
class WatchEvent:
    """One event: its ``type`` and its ``object`` (a Status for ``ERROR``)."""

    type: str
    object: KubeObject

    @property
    def resource_version(self) -> str | None:
        return (metadata_of(self.object).get("resourceVersion")) or None

    @property
    def expired(self) -> bool:
        """An ``ERROR`` saying the resourceVersion is too old (410 Gone, "Expired"): list again."""
        return self.type == ERROR and (self.object.get("code") == 410 or self.object.get("reason") in ("Expired", "Gone"))


def parse_line(line: bytes) -> WatchEvent | None:
    """The event on one line of the stream; None for a blank line or one that is not an event."""
    line = line.strip()
    if not line:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("object"), dict) or not data.get("type"):
        return None
    return WatchEvent(str(data["type"]), data["object"])


class WatchStream:
    """The events of one open watch answer (urllib3's ``resp``, not preloaded), in order.

    Iterating ends quietly when the stream ends or breaks (a dropped connection, a read timeout,
    ``close``); ``ended_by`` then says why (None: the server closed it, as ``timeoutSeconds`` asks).
    """

    def __init__(self, resp: Any) -> None:
        # urllib3's answer, unread; or a test's stream with read1 (or read), shutdown and close
        self._resp = resp
        self._closed = threading.Event()
        self.ended_by: Exception | None = None

    def __iter__(self) -> Iterator[WatchEvent]:
        pending = b""
        # read1 gives what has arrived without waiting for more; an older urllib3 2.x without it
        # is read a byte at a time (an event is a few KiB: slower, still at once).
        read = getattr(self._resp, "read1", None) or (lambda _size: self._resp.read(1))
        try:
            while not self._closed.is_set():
                chunk = read(_READ_SIZE)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    event = parse_line(line)
                    if event is not None:
                        yield event
            event = parse_line(pending)
            if event is not None and not self._closed.is_set():
                yield event
        except Exception as err:  # a dropped or timed-out connection ends the stream; the follower resumes
            if not self._closed.is_set():
                self.ended_by = err
        finally:
            self._release()

    def close(self) -> None:
        """End the stream from any thread: the reader's blocking read returns at once."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._resp.shutdown()  # unblocks a read in another thread (urllib3 2.3+)
        except Exception:  # already closed, or an older urllib3: the reader then ends at its read timeout
            pass
        self._release()

    def _release(self) -> None:
        try:
            self._resp.close()  # never back to a pool: the connection is mid-stream
        except Exception:  # closing twice, or a socket shut down under us: nothing left to free
            pass


def open_watch(client: KubeApi, req: ApiRequest, *, read_timeout: float) -> WatchStream:
    """Open the watch ``req`` (``http_requests.watch_request``) with ``client`` (a ``KubeClient``);
    ``read_timeout`` bounds each read of the stream. Not retried.

    Raises:
        ConnectionFailed: no answer. AuthenticationFailed: HTTP 401.
        ApiError: any other HTTP status of 400 or above (403: watch not allowed; 410: the
            resourceVersion is too old).
    """
    resp = client.stream(req, read_timeout)
    if resp.status >= 400:
        try:
            resp.read(cache_content=True)  # the Status, for the error
        finally:
            resp.close()
        read_response(req, resp, client.host, client.source)  # raises for every status of 400 or above
    return WatchStream(resp)


def list_with_version(client: KubeApi, res: Resource, namespace: str | None = None, *,
                      metadata_only: bool = True) -> tuple[list[KubeObject], str | None]:
    """Every object of ``res`` (in ``namespace``, or in all) and the list's resourceVersion, where
    a watch of the same collection starts: the same requests as ``KubeClient.list``."""
    items: list[KubeObject] = []
    token = version = None
    while True:
        body = cast(ListBody, client.send(list_request(res, namespace, metadata_only=metadata_only, page_size=LIST_PAGE_SIZE,
                                                       continue_token=token)).body or {})
        items.extend(body.get("items") or [])
        meta = list_meta_of(body)
        version = meta.get("resourceVersion") or version  # every page of one list has the same
        token = meta.get("continue")
        if not token:
            return items, version
