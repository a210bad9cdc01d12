"""The scan of applyset_verify: every object with a ``part-of`` label, across all namespaces.

Finding leaks needs more than the hints, so verification scans *every* listable kind across
all namespaces, with one metadata-only LIST each, selected by the ``part-of`` label. A kind that
cannot be listed (RBAC, an unavailable API) makes the scan incomplete; ``checks`` reports
that, and an incomplete scan is never ok.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from .. import spec
from ..spec import GroupKind
from ..errors import ApiError
from .inventory import Fetched, LiveMember, Unlisted, answered, unlisted_from
from ..kube.discovery import Discovery, Resource
from ..kube.api import KubeApi
from ..kube.versions import VersionFallback


def listable_resources(discovery: Discovery) -> list[Resource]:
    """One resource (the preferred version) per group-kind the server lets us LIST.

    :param discovery: the server's discovery.
    :returns: the resources, sorted by group and kind.
    """
    chosen: dict[GroupKind, Resource] = {}
    for res in discovery.resources:
        preferred = discovery.for_group_kind(res.group_kind) or res
        # Discovery without verbs (some aggregated APIs) is given the benefit of the doubt.
        if preferred.verbs and "list" not in preferred.verbs:
            continue
        chosen.setdefault(preferred.group_kind, preferred)
    return sorted(chosen.values(), key=lambda r: r.group_kind)


@dataclass
class Scan:
    """Every object carrying a part-of label (or one set's), by kind, across all namespaces, or
    in the namespaces the credentials may list when they may not list across all of them."""

    members: list[LiveMember] = field(default_factory=list)
    listed: set[GroupKind] = field(default_factory=set)  # listed in full
    unlisted: list[Unlisted] = field(default_factory=list)
    listed_in: dict[GroupKind, set[str]] = field(default_factory=dict)  # namespaces it was listed in (not in full)
    reduced: list[Unlisted] = field(default_factory=list)  # LISTs across all namespaces the credentials may not make
    warnings: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, list[LiveMember]]:
        """The members found, grouped by the id their ``part-of`` label names."""
        grouped: dict[str, list[LiveMember]] = {}
        for member in self.members:
            grouped.setdefault(member.part_of, []).append(member)
        return grouped

    def covers(self, gk: GroupKind, namespaces: Collection[str]) -> bool:
        """Whether every object of ``gk`` in ``namespaces`` was seen: it was listed in full, or (a
        namespaced kind) in each of ``namespaces``."""
        return gk in self.listed or bool(namespaces) and set(namespaces) <= self.listed_in.get(gk, set())


def scan(client: KubeApi, discovery: Discovery, applyset_id: str | None = None,
         namespaces: Collection[str] | None = None) -> Scan:
    """LIST every listable kind in all namespaces, metadata only, with the part-of selector.

    One request per kind (paginated), run in parallel: a LIST across all namespaces costs no
    more than one in a single namespace, and one per namespace would not scale. A kind whose
    LIST fails at the preferred version is listed at another (``kube.versions.VersionFallback``).

    :param client: the API client.
    :param discovery: the server's discovery.
    :param applyset_id: select only this set's members; None selects every object with a
        ``part-of`` label.
    :param namespaces: where to look when the credentials may not list a namespaced kind across
        all namespaces (403): that kind is listed in each of them instead, and the refusal is kept
        in ``reduced``, as are a refused cluster-scoped kind and a refusal in one of them. None: a
        refusal is ``unlisted``.
    :returns: the ``Scan``: the members sorted, the kinds listed in full, the LISTs that failed.
    :raises Exception: anything but an ``ApiError`` from a LIST propagates.
    """
    selector = f"{spec.LABEL_PART_OF}={applyset_id}" if applyset_id else spec.LABEL_PART_OF
    resources = listable_resources(discovery)
    result = Scan()
    fallback = VersionFallback(client, discovery)

    def fetch(pair: tuple[Resource, str | None]) -> Fetched:
        return fallback.list(*pair, label_selector=selector)

    not_found: list[tuple[Resource, ApiError]] = []
    refused: list[Resource] = []
    for res, answer in zip(resources, client.map(fetch, [(res, None) for res in resources])):
        if isinstance(answer, ApiError):
            if answer.status == 404:
                not_found.append((res, answer))
            elif answer.status in (401, 403) and namespaces is not None:
                refused.append(res)
                result.reduced.append(unlisted_from(answer, res))
            else:
                result.unlisted.append(unlisted_from(answer, res))
            continue
        if isinstance(answer, Exception):
            raise answer
        used, items = answer
        result.listed.add(res.group_kind)
        result.members += [LiveMember.from_item(used, item) for item in items]
    if not_found:
        # A kind that vanished between discovery and its LIST (a CRD deleted meanwhile) holds
        # nothing any more: asked again, discovery proves it, and the scan stays complete.
        fresh = client.discover()
        for res, err in not_found:
            if fresh.for_group_kind(res.group_kind) is None:
                result.listed.add(res.group_kind)
            else:
                result.unlisted.append(unlisted_from(err, res))
    pairs = [(res, ns) for res in refused if res.namespaced for ns in sorted(namespaces or ())]
    failed: list[Unlisted] = []
    for (res, ns), used, items in answered(client, fetch, pairs, failed):
        result.listed_in.setdefault(res.group_kind, set()).add(ns)
        result.members += [LiveMember.from_item(used, item) for item in items]
    # Refused there too: only a kind some set records in that namespace makes fsck call it incomplete.
    result.reduced += [u for u in failed if u.refused]
    result.unlisted += [u for u in failed if not u.refused]
    result.warnings += fallback.notes
    result.members.sort(key=lambda m: m.sort_key)
    return result
