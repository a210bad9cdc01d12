"""Rollback: a revision of the set's history applied again, through the normal run.

``rollback_to: N`` (or ``previous``) adds one reading step, ``load-revision``, after the parent is
read: it reads revision N (history.py), refuses what would lose data, and makes the revision's
bodies the run's desired objects. Everything after is an ordinary run: the claim, the guard (a
protected kind to prune still needs ``guard.allow_prune_kinds``), UID-preconditioned prunes of
what came later, check mode and diff, and a new revision recorded (``rollback_of: N``).

What is the revision's and what is the task's: the revision gives what was applied, the member
bodies (per-object annotations included: update strategy, ordering, apply policy); the set is the
task's parent, whose history it is. Every option of the run is the task's (field_manager,
force_conflicts, field_validation, recreate_on_immutable, wait, timeouts, guard, prune, ...), so
that a rollback can be forced or waited for like any run. A revision keeps no hooks: a rollback
runs none.

Releases of one set may have used several field managers. Server-side apply removes only the
fields its own manager owned, and conflicts with fields another manager took. So the step also
learns every field manager the kept revisions recorded (``ctx.set_managers``), and each member
whose managedFields hold entries of the others gets them merged into the rollback's manager
before its apply (csa.merge_releases, member_apply.py): the apply then leaves the object as the
revision had it.

``on_failure: rollback`` is the engine's (``engine.apply_or_roll_back``): when a release fails,
it runs the last good revision before it through this step in a second run.
"""

from __future__ import annotations

from ..history import revisions as history
from .. import spec
from ..errors import InputError
from ..inputs.manifests import Manifest
from ..inputs.manifest_checks import validate
from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..object_meta import KubeObject, labels_of, metadata_of
from ..parent.model import Parent
from ..run.options import RunOptions
from ..run.report import Recorder
from ..run.runner import READ, Step
from ..run.runner import RunContext


def rolls_back(opts: RunOptions) -> bool:
    """Whether a run with ``opts`` applies a revision of the history instead of its input."""
    return opts.history is not None and opts.history.rollback_to is not None


def _target(opts: RunOptions, parent: Parent, record: Recorder, listed: list) -> int:
    """The revision to roll back to: ``rollback_to``'s number, else the last deployed one before
    the ``parent``'s (among those ``listed``)."""
    wanted = opts.history.rollback_to if opts.history is not None else None
    if isinstance(wanted, int):  # else "previous" (Settings.validate refuses anything else)
        if any(r.number == wanted and r.stored_result == history.FAILED for r in listed):
            record.warn(f"revision {wanted} of {parent.set_ref} is marked failed: the release it records did not "
                        "go through, and rolling back to it applies that release again")
        return wanted
    earlier = history.last_good(listed, parent.revision)
    if earlier is None:
        raise InputError(f"{parent.set_ref} keeps no deployed revision before revision {parent.revision}",
                         obj=parent.set_ref,
                         fix="list the revisions with applyset_info (revisions: true) and give rollback_to a number")
    return earlier.number


def load_revision(ctx: RunContext) -> None:
    """Step load-revision: revision N read and checked; its bodies become the desired objects.

    Raises:
        InputError: no history here, the revision is not kept, or it would lose data (below).
    """
    parent = ctx.parent
    namespace = history.home(parent, ctx.opts.history)
    if not parent.exists or parent.revision is None or namespace is None:
        raise InputError(f"{parent.set_ref} has no history to roll back to", obj=parent.set_ref,
                         fix="a set records revisions from its first run with history_max above 0 (for a "
                             "cluster-scoped parent, with history_namespace); apply src or definition instead")
    secrets = history.secrets_resource(ctx.discovery)
    listed = history.revisions(history.list_secrets(ctx.client, secrets, namespace, parent.id))
    number = _target(ctx.opts, parent, ctx.record, listed)
    content = history.read(ctx.client, secrets, parent, namespace, number)
    bodies = [(m["source"], m["body"]) for m in content["members"]]
    refuse_data_loss(ctx.client, ctx.discovery, parent, number, [body for _source, body in bodies])
    revision_objects = [Manifest(_without_membership(body), f"revision {number} ({source})") for source, body in bodies]
    validate(revision_objects)
    ctx.rendered = revision_objects
    ctx.rollback_of = number
    # The task's options stay (see the module's docstring); the set's field managers are learnt.
    read_kept = {number: content}
    ctx.set_managers = history.field_managers(listed, lambda kept: read_kept.get(kept) or history.read(
        ctx.client, secrets, parent, namespace, kept))


def _without_membership(body: KubeObject) -> KubeObject:
    """The body as the user gave it: without the part-of label the run adds again."""
    meta = metadata_of(body).copy()
    labels = {k: v for k, v in labels_of(body).items() if k != spec.LABEL_PART_OF}
    meta["labels"] = labels
    if not labels:
        del meta["labels"]
    return {**body, "metadata": meta}


def _served_by_revision_crd(bodies: list[KubeObject], group: str, version: str, kind: str) -> bool:
    for body in bodies:
        if body.get("kind") != "CustomResourceDefinition":
            continue
        crd_spec = body.get("spec") or {}
        if crd_spec.get("group") == group and (crd_spec.get("names") or {}).get("kind") == kind:
            return any(v.get("name") == version and v.get("served", True) for v in crd_spec.get("versions") or ())
    return False


def refuse_data_loss(client: KubeApi, discovery: Discovery, parent: Parent, number: int,
                     bodies: list[KubeObject]) -> None:
    """Refuse, before any write, a rollback that would lose data: an object whose apiVersion is no
    longer served (a CRD version removed since) and that the revision's own CRD does not serve,
    or a CRD of the revision that drops a version the live CRD stores objects in.

    Raises:
        InputError: naming each such object.
    """
    problems = []
    crds = discovery.for_group_kind(spec.CRD_KIND)
    for body in bodies:
        group, _sep, version = body["apiVersion"].rpartition("/")
        kind, name = body["kind"], body["metadata"]["name"]
        if discovery.for_gvk(group, version, kind) is None and not _served_by_revision_crd(bodies, group, version,
                                                                                           kind):
            problems.append(f"{kind} {name}: {body['apiVersion']} is no longer served")
        if kind == "CustomResourceDefinition" and crds is not None:
            live = client.get(crds, name) or {}
            stored = set((live.get("status") or {}).get("storedVersions") or ())
            kept = {v.get("name") for v in (body.get("spec") or {}).get("versions") or ()}
            if stored - kept:
                problems.append(f"CustomResourceDefinition {name}: objects are stored as "
                                f"{', '.join(sorted(stored - kept))}, which revision {number} does not define")
    if problems:
        raise InputError(f"rolling back to revision {number} would lose data: " + "; ".join(problems),
                         obj=f"revision {number} of {parent.set_ref}",
                         fix="roll back to a later revision, or migrate those objects first; nothing was changed")


LOAD_REVISION = Step("load-revision", load_revision, READ, reads="discovery parent", sets="parent rendered")
