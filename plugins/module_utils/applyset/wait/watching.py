"""Following what a wait waits for: one LIST per (resource, namespace), then a WATCH of each.

A wait lists each (resource, namespace) group of its targets once, as polling did, and judges
every target. What is still pending is then followed by a watch of its group from the list's
resourceVersion (``_Feed``, one thread each, at most ``client.parallelism`` of them), so that a
change is judged within a round trip of happening and a long wait costs a handful of requests,
not one LIST a second. The ideas are client-go's (tools/watch: RetryWatcher, UntilWithSync) and
cli-utils' kstatus watcher, written for this wait:

- a ``BOOKMARK`` only moves the resourceVersion a watch resumes from;
- a watch the server ends (its ``timeoutSeconds``) or that drops is opened again from the last
  resourceVersion seen, after a short backoff when it failed;
- 410 Gone (an ``ERROR`` event, or the answer to the watch): the resourceVersion was compacted,
  so the group is listed again and watched from the new list;
- 401/403 on a watch: the credentials may list but not watch; the group is polled (one LIST per
  ``interval``) as waits did before, and the run says so once (``warn``);
- a group whose watch fails in any other way (another 4xx: a proxy that does not stream, say;
  or ``_MAX_FAILURES`` failures in a row) is polled too, without a warning.

Only the calling thread judges (``judge`` need not be thread-safe); the feeds only read and hand
over what they read through a queue. Every wait keeps its deadline: the calling thread waits on
the queue no longer than the time left, and when it is done it closes every stream (a blocked
read returns at once) and joins the feeds, so no thread or connection outlives the wait.
"""

from __future__ import annotations

import math
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..object_meta import KubeObject, name_of
from ..kube.api import KubeApi
from ..kube.discovery import Resource
from ..errors import ApiError, ApplySetError
from ..kube.http_requests import watch_request
from ..kube.watch import BOOKMARK, DELETED, ERROR, WatchEvent, WatchStream, list_with_version, open_watch

# Seconds between two tries to open a watch that failed, doubling up to the last.
_BACKOFF = (0.2, 0.5, 1.0, 2.0)
# The longest a single watch is asked to run (timeoutSeconds): a long wait opens a new one from
# the last resourceVersion after it, as client-go's reflector does with its random 5-10 minutes.
MAX_WATCH_SECONDS = 290
# Failures in a row (no answer, 429, 5xx, streams that end at once) before a group is polled.
_MAX_FAILURES = 5
# How long the calling thread waits for a feed to end once its stream is closed.
_JOIN_SECONDS = 1.0
# Clients whose credentials may not watch some groups: (resource, namespace) -> refused, and
# whether the run was told (once). Weak: a client's memory goes with it.
_REFUSED: weakref.WeakKeyDictionary[KubeApi, dict[str, Any]] = weakref.WeakKeyDictionary()

# A group is what one LIST or one watch covers: (resource, namespace or None).
Group = tuple[Resource, "str | None"]
# A group's objects by name, as listed and then kept up to date by its watch.
ObjectsByName = dict["str | None", KubeObject]
# What a feed hands over: ``(what, group, payload)``, the payload by ``what`` (see ``_Feed``).
FeedMessage = tuple[str, Group, Any]


def _name(obj: KubeObject) -> str | None:
    return name_of(obj)


def by_name(res: Resource, items: list[KubeObject]) -> ObjectsByName:
    """Listed or watched objects by name, each with its resource's apiVersion and kind (LIST items
    have none of their own; metadata-only ones say PartialObjectMetadata): the rules need them."""
    found: ObjectsByName = {}
    for item in items:
        if item.get("kind") in (None, "PartialObjectMetadata"):
            item["apiVersion"], item["kind"] = res.api_version, res.kind
        found.setdefault(_name(item), item)
    return found


class _Feed(threading.Thread):
    """Follows one group's collection from ``version`` until the deadline or ``close``, putting
    ``(what, key, payload)`` on ``out``: ``event`` (a ``WatchEvent``), ``listed`` (all the group's
    objects by name, after a 410), ``refused`` (an ``ApiError``: watch not allowed) or ``failed``."""

    def __init__(self, client: KubeApi, key: Group, version: str, only_name: str | None, metadata_only: bool,
                 deadline: float, out: queue.Queue[FeedMessage]):
        super().__init__(name=f"applyset-watch-{key[0].plural}", daemon=True)
        self.client, self.key, self.version = client, key, version
        self.field_selector = f"metadata.name={only_name}" if only_name else None
        self.metadata_only, self.deadline, self.out = metadata_only, deadline, out
        self._ended = threading.Event()
        self._stream: WatchStream | None = None
        self.failures = 0

    def close(self) -> None:
        self._ended.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def run(self) -> None:
        try:
            self._follow()
        except ApplySetError as err:  # a re-list that failed: the calling thread polls the group
            self.out.put(("failed", self.key, err))

    def _follow(self) -> None:
        res, namespace = self.key
        while not self._ended.is_set():
            # Counted on every path (no answer, 429, 5xx, streams that end at once): the group is then polled.
            if self.failures >= _MAX_FAILURES:
                self.out.put(("failed", self.key, None))
                return
            left = self.deadline - time.monotonic()
            if left <= 0:
                return
            req = watch_request(res, namespace, self.version, timeout_seconds=min(MAX_WATCH_SECONDS, math.ceil(left)),
                                field_selector=self.field_selector, metadata_only=self.metadata_only)
            try:
                # A read that waits longer than the time left ends the stream: the wait is over anyway.
                self._stream = stream = open_watch(self.client, req, read_timeout=left + 0.5)
            except ApiError as err:
                if err.status in (401, 403):
                    self.out.put(("refused", self.key, err))
                    return
                if err.status == 410:
                    self._relist()
                    continue
                # None: no answer (ConnectionFailed is an ApiError too), tried again like a 5xx or a 429.
                if err.status is not None and err.status < 500 and err.status != 429:  # will not change by asking again
                    self.out.put(("failed", self.key, err))
                    return
                self._back_off()
                continue
            except ApplySetError:  # no answer: try again, a little later
                self._back_off()
                continue
            if self._ended.is_set():
                stream.close()
                return
            opened = time.monotonic()
            if not self._read(stream) and time.monotonic() - opened < min(1.0, left / 2):
                self._back_off()  # a stream that ends at once without a word is a failure, not a timeout

    def _read(self, stream: WatchStream) -> bool:
        """Hand on the stream's events; whether it said anything."""
        said = False
        for event in stream:
            said = True
            if event.type == BOOKMARK:
                self.version = event.resource_version or self.version
            elif event.expired:
                stream.close()
                self._relist()
                return said
            elif event.type == ERROR:
                stream.close()
                self._back_off()
                return said
            else:
                self.version = event.resource_version or self.version
                self.failures = 0
                self.out.put(("event", self.key, event))
        if stream.ended_by is not None:
            self._back_off()
        return said

    def _relist(self) -> None:
        items, version = list_with_version(self.client, self.key[0], self.key[1], metadata_only=self.metadata_only)
        self.version = version or self.version
        self.failures = 0
        self.out.put(("listed", self.key, by_name(self.key[0], items)))

    def _back_off(self) -> None:
        pause = _BACKOFF[min(self.failures, len(_BACKOFF) - 1)]
        self.failures += 1
        self._ended.wait(max(0.0, min(pause, self.deadline - time.monotonic())))


class Feeds:
    """The feeds of one wait: started per group, read through one queue, all closed at the end."""

    def __init__(self, client: KubeApi, metadata_only: bool, deadline: float,
                 warn: Callable[[str], None] | None = None) -> None:
        self.client, self.metadata_only, self.deadline, self.warn = client, metadata_only, deadline, warn
        self.queue: queue.Queue[FeedMessage] = queue.Queue()
        self.feeds: dict[Group, _Feed] = {}
        self.polled: set[Group] = set()  # groups read by a LIST per interval instead

    def follow(self, key: Group, version: str | None, names: list[str]) -> None:
        """Watch the group ``key`` from ``version``; poll it when it cannot be watched."""
        refused = _REFUSED.setdefault(self.client, {"groups": set(), "told": False})["groups"]
        if not version or key in refused or len(self.feeds) >= max(1, self.client.parallelism):
            self.polled.add(key)
            return
        feed = _Feed(self.client, key, version, names[0] if len(names) == 1 else None, self.metadata_only,
                     self.deadline, self.queue)
        self.feeds[key] = feed
        feed.start()

    def poll(self, key: Group) -> None:
        """Poll the group ``key`` from now on (its feed has ended)."""
        self.polled.add(key)
        feed = self.feeds.pop(key, None)
        if feed is not None:
            feed.join(_JOIN_SECONDS)

    def refused(self, key: Group, err: ApiError) -> None:
        """The group's watch was refused: poll it, and say so once per client."""
        self.poll(key)
        memory = _REFUSED.setdefault(self.client, {"groups": set(), "told": False})
        memory["groups"].add(key)
        if not memory["told"] and self.warn is not None:
            memory["told"] = True
            res, namespace = key
            where = f" in namespace {namespace}" if namespace else ""
            self.warn(f"waiting polled (one LIST a second) instead of watching: watch on {res.plural}"
                      f"{'.' + res.group if res.group else ''}{where} is not allowed ({err.message}); grant "
                      "watch next to list to wait with fewer requests and notice readiness at once")

    def next(self, timeout: float) -> FeedMessage | None:
        """The next ``(what, key, payload)`` from a feed, or None after ``timeout`` seconds."""
        if not self.feeds and self.queue.empty():  # nothing watched: only polling rounds to wait for
            time.sleep(max(0.0, timeout))
            return None
        try:
            return self.queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def close(self) -> None:
        for feed in self.feeds.values():
            feed.close()
        for feed in self.feeds.values():
            feed.join(_JOIN_SECONDS)
        self.feeds.clear()


def apply_event(items: ObjectsByName, res: Resource, event: WatchEvent) -> str | None:
    """Update the group's ``items`` (by name) with a watch ``event``; the name it is about."""
    name = _name(event.object)
    if event.type == DELETED:
        items.pop(name, None)
    else:
        items[name] = by_name(res, [event.object])[name]
    return name
