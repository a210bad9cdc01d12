"""The steps that keep a set's history (history.py): record a revision, remove the history.

On the claim's route, ``record`` runs after the last member write and before the release, also
when the run fails (a failed release is recorded as ``failed``): it writes the revision's Secrets
and sets the number on the parent the run holds, so the release, the one guarded write that ends
the claim, records the pointer with the hint. A stop between the two leaves a revision nothing
points to; the next run takes the same number and overwrites it.

Revisions beyond ``history_max`` are deleted after the release (``trim``).

On the update-only route (no claim), ``record_in_place`` creates the revision's first Secret
(never overwriting one: another run may be at the same number) and then writes the pointer in
one parent write conditional on the resourceVersion the run read; either refused, the run starts
over on the claim's route. A run that changed nothing records nothing and writes nothing.
"""

from __future__ import annotations

from . import history, spec
from . import parent as parents
from .errors import ApiError, ApplySetError
from .report import CHANGING_ACTIONS
from .runner import WRITE, Step
from .without_claim import StartOver


def _secrets(ctx):
    return ctx.discovery.for_group_kind(spec.SECRET_KIND)


def _changed(ctx) -> bool:
    """Whether the run changed a member, or applies a set the current revision does not record
    (a run stopped before its release changed members without recording them)."""
    return (any(o.action in CHANGING_ACTIONS for o in ctx.report.objects)
            or history.set_digest([history.member_entry(m) for m in ctx.plan.members]) != ctx.parent.revision_digest)


def _point_to(ctx, number: int, content: dict) -> None:
    ctx.parent.revision = number
    ctx.parent.revision_digest = history.set_digest(content["members"])


def _failed(ctx, err) -> ApplySetError:
    return ApplySetError(f"could not record revision {(ctx.parent.revision or 0) + 1} of the set: {err}",
                         obj=ctx.set_ref, fix="grant create, patch, list and delete on Secrets in the history's "
                                              "namespace, or set history_max: 0 to keep no history")


def _not_permitted(ctx, err) -> bool:
    """A revision refused for the credentials' rights (403) is a warning: the release goes on unrecorded."""
    if isinstance(err, ApiError) and err.status == 403:
        ctx.record.warn(f"this release is not recorded in the set's history: {err.message}. Grant create, patch, "
                        "list and delete on Secrets in the history's namespace, or set history_max: 0")
        return True
    return False


def record(ctx) -> None:
    """Step record-revision (claim's route, always): the revision written, its number set on the
    parent for the release, and revisions beyond ``history_max`` deleted."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is None or ctx.claim is None or ctx.plan is None:
        return
    wrote = any(o.action in CHANGING_ACTIONS for o in ctx.report.objects) or ctx.stopped
    if not (wrote if ctx.failing else _changed(ctx)):  # a failed release is recorded when it wrote
        return
    number = (ctx.parent.revision or 0) + 1
    content = history.payload(ctx, number, history.FAILED if ctx.failing else history.DEPLOYED)
    try:
        history.write(ctx.client, _secrets(ctx), ctx.parent, namespace, content, exclusive=False)
    except (ApiError, ApplySetError) as err:
        if _not_permitted(ctx, err):
            return
        if not ctx.failing:
            raise _failed(ctx, err) from None
        ctx.record.warn(f"the failed release was not recorded in the history: {err}")
        return
    _point_to(ctx, number, content)
    ctx.revision = number


def record_in_place(ctx) -> None:
    """Step record-revision (update-only route): the revision's first Secret created, then the
    pointer in one parent write conditional on the resourceVersion read; a refusal of either
    starts the run over with the claim."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is None or not _changed(ctx):
        return
    number = (ctx.parent.revision or 0) + 1
    content = history.payload(ctx, number, history.DEPLOYED)
    try:
        history.write(ctx.client, _secrets(ctx), ctx.parent, namespace, content, exclusive=True)
    except history.NumberTaken:
        raise StartOver(ctx.in_place.carried) from None
    except ApiError as err:
        if _not_permitted(ctx, err):
            return
        raise _failed(ctx, err) from None
    _point_to(ctx, number, content)
    try:
        parents.write(ctx.client, ctx.parent, *ctx.decisions.hints.final, claim=None)
    except ApplySetError:
        raise StartOver(ctx.in_place.carried) from None  # the next attempt reads the parent again
    ctx.revision = number
    trim(ctx)


def trim(ctx) -> None:
    """Step trim-history (after the release): revisions older than the ``history_max`` newest
    deleted (one metadata LIST, only once there can be more than that); a failure is a warning,
    the history only stays longer."""
    keep, number = ctx.opts.history.max, ctx.revision
    namespace = history.home(ctx.parent, ctx.opts.history)
    if number is None or number <= keep or namespace is None:
        return
    try:
        items = history.list_secrets(ctx.client, _secrets(ctx), namespace, ctx.parent.id)
        history.delete(ctx.client, _secrets(ctx), namespace, history.beyond(items, number, keep))
    except ApiError as err:
        ctx.record.warn(f"old revisions of the set were not deleted (they are deleted by a later run): {err}")


def delete_all(ctx) -> None:
    """Step delete-history (uninstall and disband): every history Secret of the set deleted (the
    garbage collector would delete them with the parent; this does not wait for it)."""
    namespace = history.home(ctx.parent, ctx.opts.history)
    if namespace is None or ctx.opts.dry_run:
        return
    try:
        items = history.list_secrets(ctx.client, _secrets(ctx), namespace, ctx.parent.id)
        history.delete(ctx.client, _secrets(ctx), namespace, items)
    except ApiError as err:
        ctx.record.warn(f"the set's history was not deleted (the garbage collector deletes it with the parent): "
                        f"{err.message}")


RECORD = Step("record-revision", record, WRITE, always=True)
RECORD_IN_PLACE = Step("record-revision", record_in_place, WRITE)
TRIM = Step("trim-history", trim, WRITE)
DELETE_ALL = Step("delete-history", delete_all, WRITE)


def keeps_history(opts) -> bool:
    """Whether runs with ``opts`` keep a history (``history_max`` above 0)."""
    return opts.history is not None and opts.history.max > 0
