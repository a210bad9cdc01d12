"""applyset_verify's check of a set's release history (history/revisions.py).

Three problems are found, from one LIST of the history Secrets (their values included: every
revision is read the one way a rollback reads it, ``history.revisions.decode_revision``):

* ``history_pointer_missing``: the parent names a current revision that is not kept. Nothing can
  bring it back; the next run of applyset_apply records a new revision, and the kept ones can still
  be rolled back to. Reported, not repaired.
* ``history_damaged_revision``: a revision that cannot be read (its summary annotation, a chunk
  missing, its digest, gzip, JSON, a key missing), named with each of its Secrets and what is
  wrong. No rollback can take it, so the repair deletes its Secrets. When it is the parent's
  current revision, the pointer keeps naming it: that is what was last deployed, and the next run
  numbers its revision after it; the set then shows ``history_pointer_missing`` instead, which the
  next release ends.
* ``history_foreign_revision``: a history Secret labelled with this set's id but owned by another
  object than the parent (left by an earlier parent of the same name, or copied): a rollback
  must never read it. Repaired by deleting it (by uid), which is safe: it is no revision of this set.

The LIST is one snapshot, and a run writes a revision's first Secret (which names the others) last,
so a revision being written meanwhile is never taken for a damaged one.
"""

from __future__ import annotations

from ..object_meta import KubeObject, labels_of, metadata_of
from ..kube.api import KubeApi
from ..history import revisions as history
from ..errors import ApiError
from ..kube.discovery import Discovery, Resource
from ..parent.model import LiveParent
from .checks import ERROR, WARNING, Problem

HISTORY_POINTER_MISSING = "history_pointer_missing"
HISTORY_DAMAGED_REVISION = "history_damaged_revision"
HISTORY_FOREIGN_REVISION = "history_foreign_revision"
_POINTER_MISSING_FIX = ("nothing to repair: the next run of applyset_apply records a new revision, and the kept ones "
                        "can still be rolled back to")


def check(client: KubeApi, discovery: Discovery, set_info: LiveParent) -> tuple[list[Problem], list[KubeObject]]:
    """The history problems of one set of ours with a namespaced parent that records a revision,
    and the history Secrets a repair deletes (as listed). Sets of other tools, sets without
    history, and sets whose history cannot be listed give none (and cost no request)."""
    if not set_info.is_ours or not set_info.namespace or set_info.revision is None:
        return [], []
    secrets = history.secrets_resource(discovery)
    try:
        items = history.list_secrets(client, secrets, set_info.namespace, set_info.expected_id, values=True)
    except ApiError:
        return [], []
    foreign = [i for i in items if set_info.uid not in
               {ref.get("uid") for ref in metadata_of(i).get("ownerReferences") or ()}]
    foreign_names = {i["metadata"]["name"] for i in foreign}
    own = [i for i in items if i["metadata"]["name"] not in foreign_names]
    kept = {r.number for r in history.revisions(own)}
    problems = []
    if set_info.revision not in kept:
        problems.append(_problem(set_info, HISTORY_POINTER_MISSING, ERROR,
                                 f"the parent names revision {set_info.revision} as current, which is not kept",
                                 _POINTER_MISSING_FIX, False))
    damaged = _damaged(set_info, own)
    for err in damaged:
        problems.append(_problem(set_info, HISTORY_DAMAGED_REVISION, ERROR, err.message, _damage_fix(set_info, err),
                                 True))
    if foreign:
        names = ", ".join(sorted(foreign_names))
        problems.append(_problem(set_info, HISTORY_FOREIGN_REVISION, WARNING,
                                 f"history Secrets labelled with this set's id are not owned by its parent: {names}",
                                 "run applyset_verify with fix: true to delete them (a rollback never reads them)",
                                 True))
    numbers = {str(err.number) for err in damaged}
    return problems, foreign + [i for i in own if _number_label(i) in numbers]


def _damaged(set_info: LiveParent, own: list[KubeObject]) -> list[history.DamagedRevision]:
    """A ``history.revisions.DamagedRevision`` for each revision among ``own`` (this set's Secrets, values
    included) that cannot be read, oldest first."""
    by_name = {i["metadata"]["name"]: i for i in own}
    found = []
    for revision in history.revisions(own):
        try:
            history.decode_revision(history.set_label(set_info), set_info.expected_id, revision.number,
                                    by_name[revision.secret], by_name.get)
        except history.DamagedRevision as err:
            found.append(err)
    return found


def _damage_fix(set_info: LiveParent, err: history.DamagedRevision) -> str:
    fix = "run applyset_verify with fix: true to delete its Secrets (no rollback can read it)"
    if err.number == set_info.revision:
        fix += (f"; it is the current revision: the parent keeps naming revision {err.number} "
                f"({HISTORY_POINTER_MISSING} until the next run of applyset_apply records a new one)")
    return fix


def _number_label(item: KubeObject) -> str | None:
    return labels_of(item).get(history.LABEL_REVISION)


def _problem(set_info: LiveParent, code: str, severity: str, message: str, fix: str, fixable: bool) -> Problem:
    return Problem(code=code, severity=severity, message=f"{set_info.display}: {message}", fix=fix,
                   applyset_id=set_info.expected_id, parent=set_info.parent_ref(), objects=[set_info.parent_ref()],
                   fixable=fixable)


def repair(client: KubeApi, secrets: Resource, set_info: LiveParent, doomed: list[KubeObject],
           problems: list[Problem], dry_run: bool) -> None:
    """Delete the history Secrets ``doomed`` (nothing in check mode) and mark their problems fixed.
    Deleting the current revision leaves the pointer naming a revision not kept: reported."""
    if not doomed:
        return
    if not dry_run:
        history.delete(client, secrets, set_info.namespace, doomed)
    codes = (HISTORY_FOREIGN_REVISION, HISTORY_DAMAGED_REVISION)
    for problem in problems:
        if problem.code in codes and problem.applyset_id == set_info.expected_id:
            problem.fixed = True
    owned = [i for i in doomed if set_info.uid in
             {ref.get("uid") for ref in metadata_of(i).get("ownerReferences") or ()}]
    if str(set_info.revision) in {_number_label(i) for i in owned}:
        problems.append(_problem(set_info, HISTORY_POINTER_MISSING, ERROR,
                                 f"the parent names revision {set_info.revision} as current, which is not kept "
                                 "(its Secrets were deleted: they could not be read)", _POINTER_MISSING_FIX, False))
