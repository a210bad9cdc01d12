"""Which objects of a set Helm still owns, and when taking them over is refused (pure).

An object Helm installed names its release in its annotations (``helm_release.owner_of``). While
that release's records exist, Helm considers the object its own: ``helm upgrade`` writes it back,
``helm uninstall`` deletes it. Applying it into a set without taking the release over would leave
two owners, so the run is refused unless ``helm.take_over`` names exactly that release, and Helm is
not in the middle of changing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..object_meta import ObjectMeta
from ..parent import helm_release
from ..spec import ObjectId
from .csa import ManagedFields
from .plan import DesiredObject

Owner = tuple[str, str]
"""A Helm release that owns objects: ``(release name, its namespace)``."""


@dataclass(frozen=True)
class TakeoverRefusal:
    """Why a run may not touch the objects of a Helm release: ``message`` and ``fix``."""

    message: str
    fix: str


@dataclass(frozen=True)
class Wanted:
    """What the run asks: ``take_over`` release ``name`` in ``namespace`` (both None without ``helm``)."""

    take_over: bool
    name: str | None
    namespace: str | None

    def covers(self, owner: tuple[str, str]) -> bool:
        return self.take_over and owner == (self.name, self.namespace)


def owners(members: Iterable[DesiredObject], live_meta: Mapping[ObjectId, ObjectMeta]) -> dict[Owner, list[str]]:
    """``{(release, namespace): [object refs]}`` of the desired ``members`` whose live object
    (``live_meta``: metadata by ``ObjectId``) carries Helm's release annotations."""
    found: dict[Owner, list[str]] = {}
    for member in members:
        meta = live_meta.get(member.key)
        owner = helm_release.owner_of(meta) if meta is not None else None
        if owner is not None:
            found.setdefault(owner, []).append(member.ref)
    return found


def refuse(owned: Mapping[Owner, Sequence[str]], releases: Mapping[Owner, helm_release.Release | None],
           wanted: Wanted) -> TakeoverRefusal | None:
    """The first refusal among the releases that own desired objects, in order of their names.

    Args:
        owned: ``owners``'s answer.
        releases: ``{(release, namespace): helm_release.Release or None}`` (None: Helm keeps no
            record of it, so nobody owns the object any more and nothing is refused).
        wanted: what the run asks.
    """
    for owner in sorted(owned):
        release = releases.get(owner)
        if release is None:
            continue
        refs = owned[owner]
        if not wanted.covers(owner):
            other = (f" (this run takes over release {wanted.namespace}/{wanted.name})" if wanted.take_over else "")
            objects = (f"{refs[0]} belongs" if len(refs) == 1 else
                       f"{refs[0]} and {len(refs) - 1} more object{'s' if len(refs) > 2 else ''} belong")
            return TakeoverRefusal(
                f"{objects} to Helm release {release.ref}{other}; applying into this set what Helm still owns would "
                "leave two owners (helm upgrade would write it back, helm uninstall would delete it)",
                f"set helm.take_over: true with helm.release_name: {release.name} and helm.namespace: "
                f"{release.namespace} to take the release over, or leave these objects out; nothing was changed")
        if release.pending:
            return TakeoverRefusal(
                f"Helm release {release.ref} is {release.status} (revision {release.version}): Helm is in the middle "
                "of changing it",
                "wait for that helm command to finish (or run helm rollback to settle the release), then run again; "
                "nothing was changed")
    return None


def pending_refusal(release: helm_release.Release) -> TakeoverRefusal | None:
    """The refusal of taking over ``release`` (a ``helm_release.Release``) while Helm changes it."""
    return refuse({(release.name, release.namespace): [f"Helm release {release.ref}"]},
                  {(release.name, release.namespace): release}, Wanted(True, release.name, release.namespace))


def helm_managers(managed_fields: ManagedFields | None) -> set[str]:
    """The field managers that own Helm's release annotation on an object: the names Helm wrote
    it under (``helm`` for Helm 3's Update and Helm 4's Apply, or the binary's name)."""
    found: set[str | None] = set()
    for entry in (managed_fields or ()):
        if not isinstance(entry, dict) or entry.get("subresource"):
            continue
        annotations = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:annotations") or {}
        if f"f:{helm_release.RELEASE_NAME}" in annotations:
            found.add(entry.get("manager"))
    return {manager for manager in found if manager is not None}
