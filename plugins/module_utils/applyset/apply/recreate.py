"""The recreate update strategy: what "replace" means for a change the server refuses in place.

Chosen by name before anything is deleted (``plan.update_strategy``: ``recreate_on_immutable``
or the object's update-strategy annotation). The replacement is first sent as a dry-run create,
then the live object is deleted with a UID precondition, waited for (bounded) until gone, and
applied again. Runs in worker threads: returns the object's ``MemberOutcome``.
"""

from __future__ import annotations

import time

from typing import TYPE_CHECKING

from ..object_meta import KubeObject, metadata_of, uid_of
from ..errors import ApiError, ConflictError
from ..run.report import Change, MemberOutcome, result_for
from .member_inputs import MemberApply

if TYPE_CHECKING:  # named for the annotations only
    from ..rules.plan import DesiredObject


def recreate(run: MemberApply, member: DesiredObject, before: KubeObject | None, fields: str) -> MemberOutcome:
    """Delete (UID precondition), wait until gone (bounded), and apply again.

    The replacement is first sent as a dry-run create: the server validates and admits
    a create before it finds the name taken, so AlreadyExists means the new object
    will be accepted. An invalid manifest never gets the live object deleted.

    Args:
        run: what the apply reads of its run (``member_inputs.MemberApply``).
        member: the desired object (``plan.DesiredObject``).
        before: the object as listed, or None (it is read then).
        fields: what the server said cannot change in place.
    """
    client, opts = run.client, run.opts
    live = before if before is not None else client.get(member.resource, member.name, member.namespace)
    if live is None or not live["metadata"].get("uid"):
        return _failed(member, f"{fields}; and it was not found to recreate it; run again")
    uid = live["metadata"]["uid"]
    why = f"the server cannot change it in place ({fields})"
    refused = _replacement_refused(run, member, why)
    if refused is not None:
        return refused
    if opts.dry_run:
        return MemberOutcome(result_for(member, "replaced", reason=f"would be replaced (deleted and created again): "
                                        f"{why}", uid=uid), [Change(member.ref, live, member.body)])
    not_deleted = _delete(run, member, uid, why)
    if not_deleted is not None:
        return not_deleted
    try:
        resp = client.apply(member.resource, member.body, field_manager=opts.field_manager,
                            force=opts.force_conflicts, field_validation=opts.field_validation)
    except ApiError as err:
        return _failed(member, f"{why}; it was deleted, but creating it again failed: {err.message}; the next run "
                       "creates it", err)
    return MemberOutcome(result_for(member, "replaced", reason=f"deleted and created again: {why}",
                                    uid=resp.body["metadata"].get("uid")),
                         [Change(member.ref, live, resp.body)], [f"{member.ref}: {w}" for w in resp.warnings])


def _failed(member: DesiredObject, reason: str, err: ApiError | None = None) -> MemberOutcome:
    return MemberOutcome(result_for(member, "failed", reason=reason, error=err))


def _replacement_refused(run: MemberApply, member: DesiredObject, why: str) -> MemberOutcome | None:
    """The failed outcome when the server would refuse the replacement (a dry-run create), else None."""
    try:
        run.client.create(member.resource, member.body, field_manager=run.opts.field_manager, dry_run=True)
    except ConflictError as err:
        if err.reason != "AlreadyExists":
            return _failed(member, f"{why}; its replacement was refused, so it was not deleted: {err.message}", err)
    except ApiError as err:
        return _failed(member, f"{why}; its replacement would be refused, so it was not deleted: {err.message}", err)
    return None


def _delete(run: MemberApply, member: DesiredObject, uid: str, why: str) -> MemberOutcome | None:
    """Delete the object with ``uid`` and wait until it is gone; the failed outcome if not, else None."""
    try:
        run.client.delete(member.resource, member.name, member.namespace, uid=uid,
                          propagation_policy=run.opts.propagation_policy)
    except ApiError as err:
        if err.status == 409:
            return _failed(member, f"{why}; it was replaced by someone else meanwhile, so it was not deleted; "
                           "run again", err)
        if err.status != 404:
            return _failed(member, f"{why}; deleting it to recreate it failed: {err.message}", err)
    left = _wait_deleted(run, member, uid)
    if left is None:
        return None
    finalizers = metadata_of(left).get("finalizers") or []
    held = f" (finalizers: {', '.join(finalizers)})" if finalizers else ""
    return _failed(member, f"{why}; it was deleted but is still there after {run.opts.recreate_timeout:.0f}s{held}; "
                   "the next run creates it once it is gone")


def _wait_deleted(run: MemberApply, member: DesiredObject, uid: str) -> KubeObject | None:
    """Wait until the object with ``uid`` is gone; returns it if it is still there at the deadline."""
    deadline = time.monotonic() + run.opts.recreate_timeout
    pause = 0.1
    while True:
        live = run.client.get(member.resource, member.name, member.namespace)
        if live is None or uid_of(live) != uid:
            return None
        if time.monotonic() >= deadline:
            return live
        time.sleep(pause)
        pause = min(1.0, pause * 2)
