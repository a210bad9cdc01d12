"""The CRDs of a chart's ``crds/`` directories, as Helm and Flux treat them (pure).

Helm installs ``crds/`` before the templates, never upgrades them and never deletes them: they are
shared by every release of the chart (two releases of one chart in two namespaces use the same
CRDs), and removing them removes every custom resource of the cluster. So here they are not
members of the set: they carry no part-of label, no uninstall or prune deletes them, and another
set's release of the same chart uses them too. What a run does with them is the policy
``helm.crds``, named as Flux's HelmRelease names it (``install.crds`` / ``upgrade.crds``):

- ``Create`` (the default, Helm's way): a missing CRD is created; an existing one is left as it is;
- ``CreateReplace``: a missing CRD is created, an existing one is brought to the chart's (server-
  side apply, forced); one that this collection never applied is adopted so only with a warning
  naming it;
- ``Skip``: they are left out (``helm install --skip-crds``).

A CRD an earlier version of the collection made a member of this set is released from it (its
part-of label removed, never deleted), whatever the policy.

``split`` tells them by their ``# Source:`` line (``CHART/crds/...``, ``CHART/charts/SUB/crds/...``),
``decide`` what this run does with each from its live state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import spec
from ..object_meta import KubeObject, labels_of, metadata_of
from ..inputs.manifests import Manifest
from ..object_meta import managed_fields_of

SKIP, CREATE, CREATE_REPLACE = "Skip", "Create", "CreateReplace"
POLICIES = (SKIP, CREATE, CREATE_REPLACE)

# The source of a document of a chart's (or a subchart's) crds/ directory, from helm template's
# "# Source:" line (inputs.manifests names each document so).
_CRDS_SOURCE = re.compile(r"^[^/\s]+(?:/charts/[^/\s]+)*/crds/")


def from_crds_directory(manifest: Manifest) -> bool:
    """Whether ``manifest`` is a CRD helm rendered from a ``crds/`` directory."""
    return manifest.kind == "CustomResourceDefinition" and bool(_CRDS_SOURCE.match(manifest.source or ""))


def split(manifests: list[Manifest]) -> tuple[list[Manifest], list[Manifest]]:
    """``(the crds/ CRDs, the rest)``, each in rendering order."""
    crds = [m for m in manifests if from_crds_directory(m)]
    return crds, [m for m in manifests if not from_crds_directory(m)]


@dataclass(frozen=True)
class ChartCrds:
    """What the run does with the chart's CRDs: ``create`` the missing ones, ``replace`` existing
    ones (``CreateReplace``), leave the others as they are (``left``, by name); ``adopted`` names the
    replaced ones this collection never applied, ``released`` the UIDs of CRDs that were members of
    this set (taken out of it, kept)."""

    policy: str = CREATE
    create: tuple[Manifest, ...] = ()
    replace: tuple[Manifest, ...] = ()
    left: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    released: frozenset[str] = field(default_factory=frozenset)

    @property
    def to_apply(self) -> list[Manifest]:
        """The CRDs this run applies, created first."""
        return [*self.create, *self.replace]

    def report(self) -> dict[str, str | list[str]]:
        """What the result's ``applyset.chart_crds`` shows."""
        return {"policy": self.policy, "created": [m.name for m in self.create],
                "replaced": [m.name for m in self.replace], "left": list(self.left), "adopted": list(self.adopted)}


def decide(crds: list[Manifest], live: Mapping[str, KubeObject | None], policy: str, *, set_id: str, field_manager: str) -> ChartCrds:
    """What to do with each of ``crds`` given ``live`` (``{name: the live CRD, or None}``) and ``policy``.

    A CRD ``field_manager`` never applied (no managedFields entry of it) counts as someone else's:
    replacing it is an adoption, named in ``adopted``."""
    create: list[Manifest] = []
    replace: list[Manifest] = []
    left: list[str] = []
    adopted: list[str] = []
    released: set[str] = set()
    for crd in crds:
        obj = live.get(crd.name)
        meta = metadata_of(obj)
        if labels_of(obj).get(spec.LABEL_PART_OF) == set_id and meta.get("uid"):
            released.add(meta["uid"])
        if policy == SKIP:
            continue
        if obj is None:
            create.append(crd)
        elif policy == CREATE_REPLACE:
            replace.append(crd)
            if not any(entry.get("manager") == field_manager for entry in managed_fields_of(obj)):
                adopted.append(crd.name)
        else:
            left.append(crd.name)
    return ChartCrds(policy, tuple(create), tuple(replace), tuple(left), tuple(adopted), frozenset(released))


def adoption_warning(chart_crds: ChartCrds, chart: str) -> str | None:
    """The warning naming the existing CRDs ``CreateReplace`` takes over, or None."""
    if not chart_crds.adopted:
        return None
    return (f"helm.crds: CreateReplace brings the existing CRDs {', '.join(chart_crds.adopted)} to what chart {chart} "
            "has; they were not applied by this collection before (installed by hand, by Helm or another chart), "
            "and whatever else uses them now sees the chart's version")
