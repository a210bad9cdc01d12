"""What the steps of a run hand on to each other, as typed records: the model layer of a run.

``RunContext`` (``runner``) holds these as the values its steps hand on (``HandedOn``): what
list-live saw (``LiveState``), what decide found (``Decisions``, with the parent's ``Hints`` and a
Helm release to take over, ``TakeOver``), what the end of a set removes (``Removal``), what the
update-in-place step did (``Updates``, ``CarriedUpdate``). Records only: the steps that make them
live in ``steps/``; here they sit below the steps so that the context names them without reaching
up (issue 46).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import spec
from ..kube.listing import LiveObject
from ..parent import helm_release
from ..parent.model import Parent
from ..rules import field_policy, ordering
from ..rules import plan as plans
from ..rules import prune as prunes
from ..object_meta import KubeObject
from .report import MemberOutcome, ObjectResult


@dataclass(frozen=True)
class LiveState:
    """What the LISTs of an apply saw: ``objects`` by identity, and the recorded kinds whose
    members could not be listed (``not_listed``: they stay in the hint)."""

    objects: dict[spec.ObjectId, LiveObject]
    not_listed: frozenset[spec.GroupKind] = frozenset()

    def get(self, key: spec.ObjectId) -> LiveObject | None:
        """The live object with identity ``key``, if listed."""
        return self.objects.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.objects


@dataclass(frozen=True)
class Hints:
    """The parent's hint during a run as ``(group_kinds, namespaces)`` pairs: ``superset`` while the
    run writes (the union of old and new, for crash safety), ``final`` once everything went
    through; and whether each differs from what the parent records now."""

    superset: tuple
    final: tuple
    superset_changes: bool
    final_changes: bool


@dataclass(frozen=True)
class TakeOver:
    """A release this run takes over: the ``release``, its objects the manifests no longer contain
    (``dropped``, ``LiveObject`` labelled with this set's id, as ``apply.adoption`` adopts), how many
    desired members were its objects (``desired_count``), and Helm's field ``managers``."""

    release: helm_release.Release
    dropped: tuple
    desired_count: int
    managers: frozenset


@dataclass(frozen=True)
class Decisions:
    """What an apply decided before its first write.

    ``unchanged``: ``{ObjectId: uid}`` of members whose apply would change nothing (not sent);
    ``candidates``: listed members of the set that are not desired (adopted ones included), as
    ``LiveObject``; ``about_to_apply``: UIDs of the live objects the desired set names;
    ``prune``: the candidates' first ``prune.PruneDecisions`` (guard applied; none when prune is off);
    ``hints``: the parent's hints; ``adopted``: legacy prune objects taken in that are not
    desired (their labels already set to this set); ``namespace_to_create``: the namespace
    ``create_namespace`` makes; ``parent_namespace_first``: the set's own Namespace member that
    is applied before the parent can be created in it.
    """

    unchanged: dict[spec.ObjectId, str | None]
    candidates: tuple
    about_to_apply: frozenset
    prune: prunes.PruneDecisions
    hints: Hints
    adopted: tuple = ()
    namespace_to_create: str | None = None
    parent_namespace_first: plans.DesiredObject | None = None
    not_listed: frozenset = field(default_factory=frozenset)
    order: ordering.Order | None = None  # depends-on and sync waves; None when no member has them
    policies: field_policy.Policies = field(default_factory=field_policy.Policies)  # members and fields left alone
    helm: TakeOver | None = None  # the Helm release this run takes over (helm.take_over)
    released_uids: frozenset = field(default_factory=frozenset)  # a chart's crds/ CRDs leaving the set, kept

    def prune_context(self, parent: Parent, applied_uids: Iterable[str] = frozenset()) -> prunes.Context:
        """What the prune rules know: the recorded scope (widened by adopted objects) and the
        UIDs this run applied or is about to apply."""
        return prune_context(parent, self.adopted, applied_uids, self.released_uids)


def prune_context(parent: Parent, adopted: Iterable[LiveObject], applied_uids: Iterable[str] = frozenset(),
                  released_uids: frozenset = frozenset()) -> prunes.Context:
    """The prune rules' ``Context`` for a set whose parent is ``parent``: its recorded scope,
    widened by the ``adopted`` legacy objects (``LiveObject``), the UIDs not to prune, and those
    of a chart's CRDs released from the set (``rules.chart_crds``)."""
    return prunes.Context(
        applyset_id=parent.id, parent_uid=parent.uid,
        scope=prunes.scope_of(parent.recorded_group_kinds | {o.resource.group_kind for o in adopted},
                              parent.namespaces | {o.meta["namespace"] for o in adopted if o.meta.get("namespace")}),
        applied_uids=frozenset(applied_uids), released_uids=released_uids)


@dataclass(frozen=True)
class Removal:
    """What the end of a set decided before its first write: the ``members`` listed (``LiveObject``,
    in LIST order), for uninstall their prune ``decided`` (guard applied), and the ``hints`` the
    claim holds (the recorded ones, unchanged)."""

    members: tuple
    hints: Hints
    decided: prunes.PruneDecisions | None = None
    gone_with_crd: frozenset = frozenset()  # CRD names whose objects were not listed: they go with the CRD


@dataclass(frozen=True)
class CarriedUpdate:
    """What an attempt without the claim wrote to one member before the run started over:
    its ``result`` (None when unknown: the answer may have been lost), the object ``before``,
    ``after`` (None when unknown) and the ``warnings`` it got."""

    result: ObjectResult | None
    before: KubeObject
    after: KubeObject | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Updates:
    """What the update-in-place step did: ``outcomes`` of the members updated and what to carry
    into a start over (both ``{ObjectId: ...}``)."""

    outcomes: dict[spec.ObjectId, MemberOutcome]
    carried: dict[spec.ObjectId, CarriedUpdate]
