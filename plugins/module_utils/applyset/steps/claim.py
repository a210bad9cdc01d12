"""A run's claim on its set, so that two runs never change one set at the same time.

Without it, two runs with different desired sets could each prune what the
other just applied. The claim is an annotation on the parent, written together
with the widened hints under a resourceVersion precondition: of two runs that
read the same parent, only one can write it. A heartbeat renews the claim while
the run works; a run that dies leaves a claim that expires after ``ttl``
seconds, so the next run waits at most that long instead of being blocked.

Two runs that read the parent before either claimed it both try to write the claim; the one whose
write is refused (a stale resourceVersion, or, on a first deploy, a parent created meanwhile) has
written nothing of the set under a claim, so it has lost the race, not met a conflict: it starts
over (``RaceLost``), waits for the winner's claim (``claim_wait``) and decides again on what the
winner left. Once a run holds the claim, a refused write of the parent is a true conflict.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable

from ..kube.api import KubeApi
from . import history_steps
from ..parent import members
from ..parent import write as parent_write
from ..parent import model as parent_model
from ..errors import ApplySetError, ParentChanged
from ..run.runner import RunContext
from ..spec import GroupKind

# How many times one run starts over after losing the race for the claim. Each loss means another
# writer got to the parent first, and each start over first waits for that writer's claim; a
# parent still written under the run's feet after that many tries is written by something that
# takes no claim, and the run fails with the conflict.
RACES_BEFORE_GIVING_UP = 5


def new_run_id() -> str:
    """A new run id, ``HOST/PID/RANDOM``: who holds a claim, readable by a person."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


class RaceLost(Exception):
    """Another writer got to the parent between this run's read of it and its claim: the claim
    was not written and nothing of the set was written under it. The run starts over (the engine
    reads the parent again, waits for the other run's claim and decides again); ``error`` is the
    ``ParentChanged`` to fail with once that happened ``RACES_BEFORE_GIVING_UP`` times."""

    def __init__(self, error: ParentChanged):
        super().__init__(str(error))
        self.error = error


class Claim:
    """One run's claim on its set: written with the hints, renewed by a heartbeat, released at the end.

    The annotation key on the wire is ``applyset.kubernetes.ansible/lock`` (``spec.ANNOTATION_CLAIM``),
    kept from older versions so that their runs and ours still exclude each other.

    :param client: the API client.
    :param parent: the parent the claim is written on (updated in place by each write).
    :param run_id: this run's id (``new_run_id``).
    :param ttl: seconds a claim holds without renewal (at least 3): how long a crashed run blocks others.
    """

    def __init__(self, client: KubeApi, parent: parent_model.Parent, run_id: str, ttl: float):
        self.client = client
        self.parent = parent
        self.run_id = run_id
        self.ttl = max(3.0, float(ttl))
        self.lost: str | None = None  # why the claim was lost, if it was
        self._hints: tuple[set, set] = (set(), set())
        self._writing = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _claim_value(self) -> dict[str, str | float]:
        return {"run": self.run_id, "expires": round(time.time() + self.ttl, 3)}

    def acquire(self, group_kinds: Iterable[GroupKind], namespaces: Iterable[str]) -> None:
        """Write the hints with our claim and start the heartbeat that renews it.

        :param group_kinds: the kinds to record (the union of the old and the new hint).
        :param namespaces: the namespaces to record (likewise).
        :raises RaceLost: if another run wrote (or created) the parent since it was read; nothing
            is claimed.
        :raises ParentError: if the write fails otherwise.
        """
        self._hints = (set(group_kinds), set(namespaces))
        claim = self._claim_value()
        with self._writing:
            try:
                parent_write.write(self.client, self.parent, *self._hints, claim=claim)
            except ParentChanged as err:
                if self.parent.claim != claim:  # refused before the claim landed (not a later legacy patch)
                    raise RaceLost(err) from None
                raise
        self._heartbeat = threading.Thread(target=self._renew_until_stopped, name="applyset-claim", daemon=True)
        self._heartbeat.start()

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                with self._writing:
                    if self._stop.is_set():
                        return
                    parent_write.write(self.client, self.parent, *self._hints, claim=self._claim_value())
            except ApplySetError as err:
                self.lost = str(err)
                return

    def check(self) -> None:
        """Raise if the claim was lost (another run took the set over after it expired).

        :raises ApplySetError: naming the set and why the heartbeat failed.
        """
        if self.lost:
            raise ApplySetError(
                f"this run lost its claim on the set: {self.lost}",
                obj=self.parent.set_ref,
                fix="another run took the set over; let it finish, then run again",
            )

    def stop(self) -> None:
        """Stop renewing (the parent is about to be deleted, or the claim written away)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.ttl)

    def release(self, group_kinds: Collection[GroupKind], namespaces: Collection[str]) -> None:
        """Stop renewing and write the final hints without the claim.

        :param group_kinds: the kinds to record (exactly this run's).
        :param namespaces: the namespaces to record.
        :raises ParentError: if the parent changed meanwhile; the claim then expires by itself.
        """
        self.stop()
        with self._writing:
            parent_write.write(self.client, self.parent, group_kinds, namespaces, claim=None)


def wait_until_free(read_parent: Callable[[], parent_model.Parent], run_id: str, timeout: float,
                    parent: parent_model.Parent) -> parent_model.Parent:
    """Wait (bounded) while another run holds a claim on the set.

    :param read_parent: reads the parent again (``() -> Parent``).
    :param run_id: this run's id (its own claim does not count).
    :param timeout: seconds to wait at most.
    :param parent: the parent as last read.
    :returns: the freshly read parent, free of other runs' claims.
    :raises ApplySetError: when the other run's claim still holds after ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while parent.claimed_by_other(run_id, time.time()):
        if time.monotonic() >= deadline:
            holder = (parent.claim or {}).get("run", "?")
            raise ApplySetError(
                f"another run ({holder}) is changing this set and did not finish within {timeout:.0f}s",
                obj=parent.set_ref,
                fix="wait for that run to finish and run again; a crashed run's claim expires by itself",
            )
        time.sleep(min(1.0, max(0.1, deadline - time.monotonic())))
        parent = read_parent()
    return parent


# ----- the claim and release steps every writing route shares ------------------------------------


def take(ctx: RunContext) -> None:
    """Step claim: the parent written with the union hint (``hints.superset``) and this run's
    claim, before any member is touched."""
    # The apply's hints (records.Decisions), or on the routes that end a set the recorded ones (Removal).
    hints = ctx.decisions.hints if ctx.has("decisions") else ctx.removal.hints
    claim = Claim(ctx.client, ctx.parent, ctx.run_id, ctx.opts.claim_ttl)
    claim.acquire(*hints.superset)
    ctx.claim = claim
    ctx.report.parent_changed = ctx.report.parent_changed or hints.superset_changes


def release(ctx: RunContext) -> None:
    """Step release, last and always: the parent written with exactly the final hint when the run
    went through, with the union hint when it failed, and the claim dropped. While another error
    is on its way out, a failed release is only a warning (the claim expires by itself); a
    route that ended the claim itself (by deleting the parent) has nothing left to release."""
    claim = ctx.claim
    if claim is None:
        return
    # The apply's hints (records.Decisions), or on the routes that end a set the recorded ones (Removal).
    hints = ctx.decisions.hints if ctx.has("decisions") else ctx.removal.hints
    done = not ctx.failing
    recorded = hints.final if done else hints.superset
    if ctx.has("plan"):
        ctx.parent.record_members = members.at_release(ctx.parent.member_record, ctx.plan, ctx.report.objects, done)
    forgotten = history_steps.drop_pointer(ctx.parent, ctx.opts)
    try:
        claim.release(*recorded)
    except ApplySetError as err:
        if done:
            raise
        ctx.record.warn(f"could not release the claim on the set (it expires by itself): {err}")
    else:
        history_steps.forget(ctx.client, ctx.discovery, ctx.parent, ctx.opts, ctx.record, forgotten)
    finally:
        ctx.claim = None
    ctx.describe_hint(*recorded)
    if not ctx.stopped:  # objects failed, or none: the result says what the parent says now
        ctx.report.parent_changed = ctx.report.parent_changed or (done and hints.final_changes)
        ctx.report.applyset["tooling"] = ctx.parent.tooling
