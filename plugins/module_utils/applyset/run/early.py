"""Reads sent before the run asks for them: discovery, the parent and the set's LISTs go out while
the module still imports its code and reads the manifests.

A no-op re-run waits for three round trips (discovery with the parent, the LISTs, the parent
again at the end); a region away each costs 30-150 ms, and the module spends as long again
importing and decoding YAML before its first request. ``start`` sends the reads that do not
depend on the manifests from a thread of their own meanwhile:

* discovery and the parent (``parent.prefetch.discover_and_read``, as the read-parent step sends them);
* an existing parent's recorded kinds, LISTed in its recorded namespaces as the list-live step
  LISTs the kinds it applies (whole objects, no selector): on a re-run they are the same LISTs;
* a missing parent's namespace, which the namespace check GETs before the parent is created.

Every request sent meanwhile is recorded with its answer (``KubeClient.send`` consults
``EarlyReads``). The run itself sends nothing before its read-parent step calls ``finish``, which
waits for the early reads (bounded) and stops recording; from then on the first request of the
run that is identical to a recorded one (method, URL with query, Accept) gets the recorded answer
instead of going out again, and only the first: a later identical request (the parent read again
at the end of a no-op) goes to the server. The run drops what it did not take once its reading
steps are done (``drop``), so an answer is never older than the run's reading steps would have
read it: the reads still come one after the other in the same order (the parent, then the LISTs).
A parent claimed by another run gets no early LISTs (the run waits for that run first, and
lists after), and a run that waited drops every early answer.

A failed early read is the run's failure only where the run would send the same request: its
error is recorded like an answer. Anything unexpected stops the early reads and the run reads
for itself.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from ..kube.api import KubeApi
from ..kube.http_requests import ApiRequest
from ..kube.client import KubeClient
from .. import spec

# The longest the run waits for the early reads to finish before it reads for itself (seconds).
# Each request is bounded by the client's own timeouts; this only bounds the wait for all of them.
FINISH_TIMEOUT = 60.0


def _key(req: ApiRequest) -> tuple:
    return req.method, req.target, req.accept


class EarlyReads:
    """The answers to requests sent before the run's first step: recorded while ``recording``,
    each taken at most once afterwards (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[tuple, Future] = {}
        self._recording = True
        self._thread: threading.Thread | None = None
        self.sent = 0  # requests recorded
        self.taken = 0  # answers the run took instead of sending

    def record(self, req: ApiRequest) -> Future | None:
        """A request about to be sent: the future its answer goes to, or None when nothing is
        recorded (the early reads are over, or it writes)."""
        if req.method != "GET":
            return None
        with self._lock:
            if not self._recording:
                return None
            future: Future = Future()
            self._answers.setdefault(_key(req), future)
            self.sent += 1
            return future

    def take(self, req: ApiRequest) -> Future | None:
        """The recorded answer to ``req`` (once), or None: send it."""
        if req.method != "GET":
            return None
        with self._lock:
            if self._recording:
                return None
            future = self._answers.pop(_key(req), None)
            self.taken += future is not None
            return future

    def finish(self, timeout: float = FINISH_TIMEOUT) -> None:
        """Wait for the early reads (at most ``timeout`` seconds), then stop recording."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            self._recording = False
            if thread is not None and thread.is_alive():
                self._answers.clear()  # still on its way: the run reads for itself

    def drop(self) -> None:
        """Forget every answer the run did not take (its reading steps are done)."""
        with self._lock:
            self._recording = False
            self._answers.clear()


def start(client: KubeApi, parent_spec: str | dict[str, Any], namespace: str | None, *, takeover: bool = False,
          list_whole: bool = True, lists: bool = True) -> EarlyReads | None:
    """Send the early reads of a run of ``client`` from a thread (see the module) and return them;
    the client answers the run's identical requests from them once it calls ``finish``.

    Args:
        parent_spec, namespace: the run's parent option and namespace.
        takeover: the run's takeover option (how the parent is judged).
        list_whole: whether the run LISTs the kinds it applies as whole objects (else metadata).
        lists: whether to LIST the recorded kinds at all (apply runs; not teardown).

    Returns:
        The ``EarlyReads``; None when the client takes none (a stand-in client).
    """
    if not isinstance(client, KubeClient):
        return None
    early = EarlyReads()
    client.early = early

    def work() -> None:
        try:
            _read_early(client, parent_spec, namespace, takeover, list_whole, lists)
        except Exception:  # noqa: BLE001 - the run reads for itself, and meets the error there
            pass
        finally:
            with early._lock:  # pylint: disable=protected-access
                early._recording = False  # pylint: disable=protected-access

    early._thread = threading.Thread(target=work, name="applyset-early-reads", daemon=True)
    early._thread.start()
    return early


def _read_early(client: KubeApi, parent_spec: str | dict[str, Any], namespace: str | None, takeover: bool, list_whole: bool,
                lists: bool) -> None:
    # Imported here: the module starts the early reads before it imports the rest of the engine.
    from ..kube import listing
    from ..parent import read as parents
    from ..parent import resolve as parent_resolve
    from ..parent.prefetch import discover_and_read

    discovery, reader = discover_and_read(client, parent_spec, namespace)
    res, name, ns, definition = parent_resolve.resolve(discovery, parent_spec, namespace)
    parent, _warnings = parents.read(reader, discovery, res, name, ns, takeover=takeover, definition=definition)
    if not lists:
        return
    if not parent.exists:
        ns_res = discovery.for_group_kind(spec.NAMESPACE_KIND)
        if parent.namespace and ns_res is not None:
            client.get(ns_res, parent.namespace)
        return
    if parent.claimed_by_other("", time.time()):
        return  # the run waits for that run to finish, and lists after it
    pairs = list(listing.recorded_scope(parent, discovery).pairs)
    if pairs:
        listing.list_each(client, pairs, selector_for=lambda pair: None,
                          full_for=frozenset(pairs) if list_whole else frozenset())


def finish(client: KubeApi) -> None:
    """The run's first step: wait for the client's early reads (if any) and stop recording."""
    early = getattr(client, "early", None)
    if early is not None:
        early.finish()


def drop(client: KubeApi) -> None:
    """The run's reading steps are done: forget the early answers it did not take."""
    early = getattr(client, "early", None)
    if early is not None:
        early.drop()
