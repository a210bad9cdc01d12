"""The steps that keep a set's history (history.py): record a revision, remove the history.

On the claim's route, ``record`` runs after the last member write and before the release, also
when the run fails (a failed release is recorded as ``failed``): it writes the revision's Secrets
and sets the number on the parent the run holds, so the release, the one guarded write that ends
the claim, records the pointer with the hint. A stop between the two leaves a revision nothing
points to; the next run takes the same number and overwrites it.

Revisions beyond ``history_max`` are deleted after the release (``trim``).

On the update-only route (no claim) the revision's first Secret is created, never overwritten
(another run may be at the same number), and the pointer is then written in one parent write
conditional on the resourceVersion the run read; either refused, the run starts over on the
claim's route. When the set differs from the one the current revision records, the run records
a revision whatever its updates answer, so update-in-place (``without_claim.update_in_place``, built
with ``revision_alongside``) creates the Secret while the members are updated, and the pointer's
conditional write, which confirms that no run wrote the set meanwhile, stands in for the
confirm-parent-unchanged GET (``without_claim.confirm_parent_unchanged`` sends none while a revision
waits for its pointer): a changed set reaches a cluster a region
away in two round trips fewer. A revision created for a run that then starts over or fails is one
nothing points to, as after a stop: the claim's route takes its number and overwrites it. Else
(the same set, members changed on the cluster) ``record_in_place`` creates the revision after the
confirmation, only when an update changed something. A run that changed nothing records nothing
and writes nothing.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Union

from ..history import revisions as history
from . import hook_run, without_claim
from ..parent import write as parent_write
from ..errors import ApiError, ApplySetError
from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from ..parent.model import Parent
from ..rules.plan import Plan
from ..run.report import CHANGING_ACTIONS, Recorder, Report
from ..run.options import RunOptions
from ..run.runner import WRITE, Step
from .without_claim import StartOver
from ..run.runner import RunContext
from ..run.options import Options
from ..run.records import CarriedUpdate, Decisions
from ..spec import ObjectId

# What creating a revision in a worker answers (_make_and_create_revision): None when it was created, the
# class NumberTaken when another run holds its number, or the error that refused it.
_Outcome = Union[ApplySetError, type[history.NumberTaken], None]
_Content = dict[str, Any]  # a revision's JSON document (history.payload): its members, options, provenance ...
# What makes the revision of this run numbered ``number`` with ``result`` (``history.payload``, bound).
_Payload = Callable[[int, str], _Content]


def _secrets(discovery: Discovery) -> Resource:
    return history.secrets_resource(discovery)


def _payload(opts: Options, parent: Parent, plan: Plan, decisions: Decisions, rollback_of: int | None) -> _Payload:
    """What makes revision ``number`` of this run with ``result`` (``history.payload``)."""
    return functools.partial(history.payload, opts=opts, parent=parent, members=plan.members,
                             hint=decisions.hints.final, rollback_of=rollback_of)


def _changed(report: Report, plan: Plan, parent: Parent) -> bool:
    """Whether the run changed a member, or applies a set the current revision does not record
    (a run stopped before its release changed members without recording them)."""
    return any(o.action in CHANGING_ACTIONS for o in report.objects) or _set_differs(plan, parent)


def _point_to(parent: Parent, number: int, content: _Content) -> None:
    parent.revision = number
    parent.revision_digest = history.set_digest(content["members"])


def _failed(parent: Parent, err: ApplySetError) -> ApplySetError:
    return ApplySetError(f"could not record revision {(parent.revision or 0) + 1} of the set: {err}",
                         obj=parent.set_ref, fix="grant create, patch, list and delete on Secrets in the history's "
                                                 "namespace, or set history_max: 0 to keep no history")


def _not_permitted(record: Recorder, err: ApplySetError) -> bool:
    """A revision refused for the credentials' rights (403) is a warning: the release goes on unrecorded."""
    if isinstance(err, ApiError) and err.status == 403:
        record.warn(f"this release is not recorded in the set's history: {err.message}. Grant create, patch, "
                    "list and delete on Secrets in the history's namespace, or set history_max: 0")
        return True
    return False


def record(ctx: RunContext) -> None:
    """Step record-revision (claim's route, always): the revision written, its number set on the
    parent for the release, and revisions beyond ``history_max`` deleted."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is None or ctx.claim is None or not ctx.has("plan"):
        return
    # A step that raised may have written members it did not record, but not the pre-apply hooks:
    # a release they stopped wrote no member, and there is nothing to record or to roll back.
    stopped_after_writes = ctx.stopped and ctx.stopped_at != hook_run.PRE_APPLY_STEP
    wrote = any(o.action in CHANGING_ACTIONS for o in ctx.report.objects) or stopped_after_writes
    # A failed release is recorded when it wrote.
    if not (wrote if ctx.failing else _changed(ctx.report, ctx.plan, ctx.parent)):
        return
    number = (ctx.parent.revision or 0) + 1
    payload = _payload(ctx.apply_options, ctx.parent, ctx.plan, ctx.decisions, ctx.rollback_of)
    content = payload(number, history.FAILED if ctx.failing else history.DEPLOYED)
    try:
        history.write(ctx.client, _secrets(ctx.discovery), ctx.parent, namespace, content, exclusive=False)
    except (ApiError, ApplySetError) as err:
        if _not_permitted(ctx.record, err):
            return
        if not ctx.failing:
            raise _failed(ctx.parent, err) from None
        ctx.record.warn(f"the failed release was not recorded in the history: {err}")
        return
    _point_to(ctx.parent, number, content)
    ctx.revision = number


def revision_alongside(ctx: RunContext) -> without_claim.Alongside | None:
    """What update-in-place sends alongside the updates on a route with a history: when the set
    is not the one the current revision records (so the run records a revision whatever the
    updates answer), the revision's first Secret, created while the members are updated; the
    pointer to it is written by ``record_in_place``. Else nothing."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is None or not _set_differs(ctx.plan, ctx.parent):
        return None
    payload = _payload(ctx.apply_options, ctx.parent, ctx.plan, ctx.decisions, ctx.rollback_of)
    client, secrets, parent, record = ctx.client, _secrets(ctx.discovery), ctx.parent, ctx.record

    def keep_pending(answer: tuple[_Content, _Outcome]) -> None:
        """The revision created alongside the updates waits for its pointer (``record_in_place``)."""
        content, outcome = answer
        if _created(outcome, record, parent, ctx.in_place.carried):
            ctx.pending_revision = content  # else not recorded: confirm-parent-unchanged reads the parent

    # The payload too is made in the worker: the first updates go out without waiting for it.
    return without_claim.Alongside(work=lambda: _make_and_create_revision(client, secrets, parent, namespace, payload),
                                   then=keep_pending)


def _set_differs(plan: Plan, parent: Parent) -> bool:
    """Whether the set ``plan`` applies is not the one the current revision (``parent``'s) records."""
    return history.set_digest([history.member_entry(m) for m in plan.members]) != parent.revision_digest


def _make_and_create_revision(client: KubeApi, secrets: Resource, parent: Parent, namespace: str,
                              payload: _Payload) -> tuple[_Content, _Outcome]:
    """The next revision's ``payload``, made and created without overwriting one (in a worker):
    (content, outcome), the outcome None, ``history.NumberTaken`` (the class) when another run
    holds the number, or the error that refused it."""
    content = payload((parent.revision or 0) + 1, history.DEPLOYED)
    try:
        history.write(client, secrets, parent, namespace, content, exclusive=True)
    except history.NumberTaken:
        return content, history.NumberTaken
    except ApplySetError as err:
        return content, err
    return content, None


def _created(outcome: _Outcome, record: Recorder, parent: Parent, carried: dict[ObjectId, CarriedUpdate]) -> bool:
    """Whether ``_make_and_create_revision``'s ``outcome`` is a revision created. A number taken starts the
    run over with the claim (``carried``: what update-in-place wrote); a refusal for the credentials'
    rights is a warning (False); any other error fails the run."""
    if outcome is history.NumberTaken:
        raise StartOver(carried)
    if isinstance(outcome, ApplySetError):
        if _not_permitted(record, outcome):
            return False
        raise _failed(parent, outcome)
    return True


def record_in_place(ctx: RunContext) -> None:
    """Step record-revision (update-only route): the revision's first Secret created, unless
    update-in-place did (``revision_alongside``), then the pointer in one parent write conditional
    on the resourceVersion read; a refusal of either starts the run over with the claim."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    content = ctx.pending_revision
    if content is None:
        # None created by update-in-place: the set is the recorded one, recorded again only when an
        # update changed something; or the set differs and its revision was refused (warned there).
        updated = any(o.action in CHANGING_ACTIONS for o in ctx.report.objects)
        if namespace is None or not updated or _set_differs(ctx.plan, ctx.parent):
            return
        payload = _payload(ctx.apply_options, ctx.parent, ctx.plan, ctx.decisions, ctx.rollback_of)
        content, outcome = _make_and_create_revision(ctx.client, _secrets(ctx.discovery), ctx.parent, namespace,
                                                     payload)
        if not _created(outcome, ctx.record, ctx.parent, ctx.in_place.carried):
            return
    _point_to(ctx.parent, content["revision"], content)
    try:
        parent_write.write(ctx.client, ctx.parent, *ctx.decisions.hints.final, claim=None)
    except ApplySetError:
        raise StartOver(ctx.in_place.carried) from None  # the next attempt reads the parent again
    ctx.revision = content["revision"]
    trim(ctx)


def trim(ctx: RunContext) -> None:
    """Step trim-history (after the release): revisions older than the ``history_max`` newest
    deleted (one metadata LIST, only once there can be more than that); a failure is a warning,
    the history only stays longer."""
    settings = ctx.opts.history
    if settings is None:  # the route has this step only with a history
        return
    keep, number = settings.max, ctx.revision
    namespace = history.home(ctx.parent, settings)
    if number is None or number <= keep or namespace is None:
        return
    try:
        items = history.list_secrets(ctx.client, _secrets(ctx.discovery), namespace, ctx.parent.id)
        history.delete(ctx.client, _secrets(ctx.discovery), namespace, history.beyond(items, number, keep))
    except ApiError as err:
        ctx.record.warn(f"old revisions of the set were not deleted (they are deleted by a later run): {err}")


def drop_pointer(parent: Parent, opts: RunOptions) -> int | None:
    """At the release of a run that keeps no history (``history.forgets``): the ``parent``'s pointer
    dropped, so that the release's write leaves its annotations out (what this run deployed is no
    revision). Returns the number it named, for ``forget``."""
    if not history.forgets(parent, opts.history):
        return None
    number, parent.revision, parent.revision_digest = parent.revision, None, None
    return number


def forget(client: KubeApi, discovery: Discovery, parent: Parent, opts: RunOptions, record: Recorder,
           number: int | None) -> None:
    """After the release that dropped the pointer to revision ``number``: every history Secret of
    the set deleted, as ``history_max: 0`` keeps none, and so that no revision outlives the pointer
    (a later run with a history numbers from 1 again). A failure is a warning."""
    settings = opts.history
    namespace = parent.namespace or (settings.namespace if settings is not None else None)
    if number is not None and namespace:
        _delete_history(client, discovery, parent, record, namespace,
                        f"the set's history (up to revision {number}) was not deleted, though this run keeps none "
                        "(history_max: 0); delete its Secrets, or they go with the parent")


def delete_all(ctx: RunContext) -> None:
    """Step delete-history (uninstall and disband): every history Secret of the set deleted (the
    garbage collector would delete them with the parent; this does not wait for it)."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is not None and not ctx.opts.dry_run:
        _delete_history(ctx.client, ctx.discovery, ctx.parent, ctx.record, namespace,
                        "the set's history was not deleted (the garbage collector deletes it with the parent)")


def _delete_history(client: KubeApi, discovery: Discovery, parent: Parent, record: Recorder, namespace: str,
                    unless_deleted: str) -> None:
    """Every history Secret of the set whose parent is ``parent`` in ``namespace`` deleted; a failure
    is the warning ``unless_deleted``, with the error."""
    try:
        items = history.list_secrets(client, _secrets(discovery), namespace, parent.id)
        history.delete(client, _secrets(discovery), namespace, items)
    except ApiError as err:
        record.warn(f"{unless_deleted}: {err.message}")


RECORD = Step("record-revision", record, WRITE, always=True, reads="decisions discovery parent", may_read="plan")
RECORD_IN_PLACE = Step("record-revision", record_in_place, WRITE, reads="decisions discovery in_place parent plan")
TRIM = Step("trim-history", trim, WRITE, reads="discovery parent")
DELETE_ALL = Step("delete-history", delete_all, WRITE, reads="discovery parent")


def keeps_history(opts: RunOptions) -> bool:
    """Whether runs with ``opts`` keep a history (``history_max`` above 0)."""
    return opts.history is not None and opts.history.max > 0
