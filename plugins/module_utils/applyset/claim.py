"""A run's claim on its set, so that two runs never change one set at the same time.

Without it, two runs with different desired sets could each prune what the
other just applied. The claim is an annotation on the parent, written together
with the widened hints under a resourceVersion precondition: of two runs that
read the same parent, only one can write it. A heartbeat renews the claim while
the run works; a run that dies leaves a claim that expires after ``ttl``
seconds, so the next run waits at most that long instead of being blocked.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time

from . import parent as parents
from .errors import ApplySetError


def new_run_id() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


class Claim:
    def __init__(self, client, parent: parents.Parent, run_id: str, ttl: float):
        self.client = client
        self.parent = parent
        self.run_id = run_id
        self.ttl = max(3.0, float(ttl))
        self.lost: str | None = None  # why the claim was lost, if it was
        self._hints = (set(), set())
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _lock_value(self) -> dict:
        return {"run": self.run_id, "expires": round(time.time() + self.ttl, 3)}

    def acquire(self, group_kinds, namespaces) -> None:
        """Write the hints with our claim; fails cleanly if another run wrote the parent since we read it."""
        self._hints = (set(group_kinds), set(namespaces))
        with self._write_lock:
            parents.write(self.client, self.parent, *self._hints, lock=self._lock_value())
        self._heartbeat = threading.Thread(target=self._renew_until_stopped, name="applyset-claim", daemon=True)
        self._heartbeat.start()

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                with self._write_lock:
                    if self._stop.is_set():
                        return
                    parents.write(self.client, self.parent, *self._hints, lock=self._lock_value())
            except ApplySetError as err:
                self.lost = str(err)
                return

    def check(self) -> None:
        """Raise if the claim was lost (another run took the set over after it expired)."""
        if self.lost:
            raise ApplySetError(
                f"this run lost its claim on the set: {self.lost}",
                obj=f"ApplySet {self.parent.ref}",
                fix="another run took the set over; let it finish, then run again",
            )

    def stop(self) -> None:
        """Stop renewing (the parent is about to be deleted, or the claim written away)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.ttl)

    def release(self, group_kinds, namespaces) -> None:
        """Stop renewing and write the final hints without the claim."""
        self.stop()
        with self._write_lock:
            parents.write(self.client, self.parent, group_kinds, namespaces, lock=None)


def wait_until_free(read_parent, run_id: str, timeout: float, parent: parents.Parent) -> parents.Parent:
    """Wait (bounded) while another run holds the set; returns the freshly read parent."""
    deadline = time.monotonic() + timeout
    while parent.locked_by_other(run_id, time.time()):
        if time.monotonic() >= deadline:
            holder = (parent.lock or {}).get("run", "?")
            raise ApplySetError(
                f"another run ({holder}) is changing this set and did not finish within {timeout:.0f}s",
                obj=f"ApplySet {parent.ref}",
                fix="wait for that run to finish and run again; a crashed run's claim expires by itself",
            )
        time.sleep(min(1.0, max(0.1, deadline - time.monotonic())))
        parent = read_parent()
    return parent
