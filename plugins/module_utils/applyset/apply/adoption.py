"""Taking a legacy ``kubectl apply --prune -l`` set into this set (``adopt_legacy``).

``select`` decides (LISTs only) which objects are taken in; ``label`` writes this set's part-of
label on those that are not desired, right after the claim and before any member is applied
(desired ones are labelled by their apply). Which objects qualify is legacy.py's rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..rules import legacy as legacies
from .. import spec
from ..spec import GroupKind
from ..kube.listing import LiveObject, list_pairs, live_objects
from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from ..parent.model import Parent
from ..rules.plan import Plan
from ..run.options import Options
from ..run.report import Recorder


@dataclass(frozen=True)
class Adoption:
    """The legacy objects a run takes in: ``adopted`` (not desired, as ``LiveObject`` whose labels
    already carry this set's id) and ``desired_count`` (taken in, and desired: their apply labels
    them)."""

    adopted: tuple[LiveObject, ...] = ()
    desired_count: int = 0


NONE = Adoption()


def select(client: KubeApi, discovery: Discovery, opts: Options, parent: Parent, record: Recorder,
           plan: Plan) -> Adoption:
    """The objects of the legacy prune set that this run takes in (LISTs, no write); records the
    references in ``applyset.adopted`` and warnings about what was left alone."""
    options = opts.adopt_legacy
    if options is None:
        return NONE
    served, missing = legacies.scope_kinds(options, discovery)
    namespaces = sorted({m.namespace for m in plan.members if m.resource.namespaced and m.namespace})
    pairs: list[tuple[Resource, str | None]] = [(res, ns) for res in served if res.namespaced for ns in namespaces]
    pairs += [(res, None) for res in served if not res.namespaced]
    listed = list_pairs(client, pairs, selector_for=lambda pair: options.selector, obj=parent.set_ref)
    found = [(o.resource, o.meta) for o in live_objects(listed)]
    selection = legacies.select(found, parent.id, options, parent.set_ref)
    desired_keys = plan.keys()
    adopted, refs, desired_count = [], [], 0
    for res, meta in selection.adopted:
        refs.append(legacies.ref(res, meta))
        if spec.ObjectId.from_metadata(res, meta) in desired_keys:
            desired_count += 1
            continue  # applying it labels it
        labels = {**(meta.get("labels") or {}), spec.LABEL_PART_OF: parent.id}
        adopted.append(LiveObject(res, {"metadata": {**meta, "labels": labels}}))
    record.report.applyset["adopted"] = refs
    record.warn(*_warnings(options, refs, selection, missing))
    return Adoption(tuple(adopted), desired_count)


def _warnings(options: legacies.LegacyAdoption, refs: list[str], selection: legacies.Selection,
              missing: list[GroupKind]) -> list[str]:
    warnings = []
    if refs:
        warnings.append(
            f"adopt_legacy: {len(refs)} object(s) matching {options.selector} taken into the set: "
            + ", ".join(refs[:10]) + (f" and {len(refs) - 10} more" if len(refs) > 10 else ""))
    if selection.not_applied:
        warnings.append(
            f"adopt_legacy: {len(selection.not_applied)} object(s) match {options.selector} but were not made by "
            "kubectl apply (no last-applied-configuration annotation), so they are left alone, as kubectl's "
            "prune leaves them")
    for res, meta, other in selection.elsewhere:
        warnings.append(f"adopt_legacy: {legacies.ref(res, meta)} belongs to the ApplySet {other} already; left alone")
    if missing:
        warnings.append("adopt_legacy: the server does not serve "
                        + ", ".join(sorted(map(str, missing))) + "; nothing of those is adopted")
    return warnings
