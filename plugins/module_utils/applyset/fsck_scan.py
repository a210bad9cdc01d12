"""The scan of applyset_verify: every object with a ``part-of`` label, across all namespaces.

Finding leaks needs more than the hints, so verification scans *every* listable kind across
all namespaces, with one metadata-only LIST each, selected by the ``part-of`` label. A kind that
cannot be listed (RBAC, an unavailable API) makes the scan incomplete; ``fsck_checks`` reports
that, and an incomplete scan is never ok.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import spec
from .errors import ApiError
from .inventory import LiveMember, unlisted_from
from .kube import Discovery, KubeClient, Resource


def listable_resources(discovery: Discovery) -> list[Resource]:
    """One resource (the preferred version) per group-kind the server lets us LIST.

    :param discovery: the server's discovery.
    :returns: the resources, sorted by group and kind.
    """
    chosen = {}
    for res in discovery.resources:
        preferred = discovery.for_group_kind(res.group_kind) or res
        # Discovery without verbs (some aggregated APIs) is given the benefit of the doubt.
        if preferred.verbs and "list" not in preferred.verbs:
            continue
        chosen.setdefault(preferred.group_kind, preferred)
    return sorted(chosen.values(), key=lambda r: r.group_kind)


@dataclass
class Scan:
    """Every object carrying a part-of label (or one set's), by kind, across all namespaces."""

    members: list = field(default_factory=list)
    listed: set = field(default_factory=set)  # GroupKinds listed in full
    unlisted: list = field(default_factory=list)

    def by_id(self) -> dict:
        """The members found, grouped by the id their ``part-of`` label names."""
        grouped: dict[str, list] = {}
        for member in self.members:
            grouped.setdefault(member.part_of, []).append(member)
        return grouped


def scan(client: KubeClient, discovery: Discovery, applyset_id: str | None = None) -> Scan:
    """LIST every listable kind in all namespaces, metadata only, with the part-of selector.

    One request per kind (paginated), run in parallel: a LIST across all namespaces costs no
    more than one in a single namespace, and one per namespace would not scale.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param applyset_id: select only this set's members; None selects every object with a
        ``part-of`` label.
    :returns: the ``Scan``: the members sorted, the kinds listed in full, the LISTs that failed.
    :raises Exception: anything but an ``ApiError`` from a LIST propagates.
    """
    selector = f"{spec.LABEL_PART_OF}={applyset_id}" if applyset_id else spec.LABEL_PART_OF
    resources = listable_resources(discovery)
    result = Scan()

    def fetch(res):
        return list(client.list(res, None, label_selector=selector))

    not_found = []
    for res, items in zip(resources, client.map(fetch, resources)):
        if isinstance(items, ApiError):
            if items.status == 404:
                not_found.append((res, items))
            else:
                result.unlisted.append(unlisted_from(items, res))
            continue
        if isinstance(items, Exception):
            raise items
        result.listed.add(res.group_kind)
        result.members += [LiveMember.from_item(res, item) for item in items]
    if not_found:
        # A kind that vanished between discovery and its LIST (a CRD deleted meanwhile) holds
        # nothing any more: asked again, discovery proves it, and the scan stays complete.
        fresh = client.discover()
        for res, err in not_found:
            if fresh.for_group_kind(res.group_kind) is None:
                result.listed.add(res.group_kind)
            else:
                result.unlisted.append(unlisted_from(err, res))
    result.members.sort(key=lambda m: m.sort_key)
    return result
