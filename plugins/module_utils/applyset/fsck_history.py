"""applyset_verify's check of a set's release history (history.py).

Two problems are found, from one metadata-only LIST of the history Secrets (no value read):

* ``history_pointer_missing``: the parent names a current revision that is not kept. Nothing can
  bring it back; the next run of applyset_apply records a new revision, and the kept ones can still
  be rolled back to. Reported, not repaired.
* ``history_foreign_revision``: a history Secret labelled with this set's id but owned by another
  object than the parent (left by an earlier parent of the same name, or copied): a rollback
  must never read it. Repaired by deleting it (by uid), which is safe: it is no revision of this set.
"""

from __future__ import annotations

from . import history, spec
from .errors import ApiError
from .fsck_checks import ERROR, WARNING, Problem

HISTORY_POINTER_MISSING = "history_pointer_missing"
HISTORY_FOREIGN_REVISION = "history_foreign_revision"


def check(client, discovery, set_info) -> tuple[list, list]:
    """The history problems of one set of ours with a namespaced parent that records a revision,
    and the history Secrets a repair deletes (metadata as listed). Sets of other tools, sets without
    history, and sets whose history cannot be listed give none (and cost no request)."""
    if not set_info.is_ours or not set_info.namespace or set_info.revision is None:
        return [], []
    secrets = discovery.for_group_kind(spec.SECRET_KIND)
    try:
        items = history.list_secrets(client, secrets, set_info.namespace, set_info.expected_id)
    except ApiError:
        return [], []
    foreign = [i for i in items if set_info.uid not in
               {ref.get("uid") for ref in (i.get("metadata") or {}).get("ownerReferences") or ()}]
    foreign_names = {i["metadata"]["name"] for i in foreign}
    kept = {r.number for r in history.revisions(items) if r.secret not in foreign_names}
    problems = []
    if set_info.revision is not None and set_info.revision not in kept:
        problems.append(_problem(set_info, HISTORY_POINTER_MISSING, ERROR,
                                 f"the parent names revision {set_info.revision} as current, which is not kept",
                                 "nothing to repair: the next run of applyset_apply records a new revision, and "
                                 "the kept ones can still be rolled back to", False))
    if foreign:
        names = ", ".join(sorted(foreign_names))
        problems.append(_problem(set_info, HISTORY_FOREIGN_REVISION, WARNING,
                                 f"history Secrets labelled with this set's id are not owned by its parent: {names}",
                                 "run applyset_verify with fix: true to delete them (a rollback never reads them)",
                                 True))
    return problems, foreign


def _problem(set_info, code, severity, message, fix, fixable) -> Problem:
    return Problem(code=code, severity=severity, message=f"{set_info.display}: {message}", fix=fix,
                   applyset_id=set_info.expected_id, parent=set_info.parent_ref(), objects=[set_info.parent_ref()],
                   fixable=fixable)


def repair(client, secrets, set_info, foreign: list, problems: list, dry_run: bool) -> None:
    """Delete the history Secrets of ``foreign`` (nothing in check mode) and mark the problem fixed."""
    if not foreign:
        return
    if not dry_run:
        history.delete(client, secrets, set_info.namespace, foreign)
    for problem in problems:
        if problem.code == HISTORY_FOREIGN_REVISION and problem.applyset_id == set_info.expected_id:
            problem.fixed = True
