"""What one member's apply reads of its run, taken once before the workers start.

The workers (``member_apply``, ``recreate``) get this frozen value, not the run's context: they
read only what is named here, nothing a step could change under them while they run, and a test
builds one without a run (issue 46: a member's apply takes the values it needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..kube.api import KubeApi
from ..object_meta import KubeObject
from ..run.options import Options
from ..run.runner import RunContext, StepOrderError
from ..spec import ObjectId
from . import namespaces

if TYPE_CHECKING:  # what the reading steps hand on (run/records.py): named for the annotations only
    from ..run.records import CarriedUpdate, Decisions, LiveState


@dataclass(frozen=True)
class MemberApply:
    """The run as a member's apply sees it: the client and options, the parent's identity and
    recorded member digests, the namespace ``create_namespace`` makes, what list-live saw and decide
    found (None on routes without them), the field managers of the set's releases (a rollback) and
    what an earlier attempt without the claim wrote (``carried``)."""

    client: KubeApi
    opts: Options
    parent_id: str
    member_record: frozenset[str] | None
    home_namespace: str | None
    live: LiveState | None
    decisions: Decisions | None
    set_managers: frozenset[str]
    carried: dict[ObjectId, CarriedUpdate]

    @property
    def unchanged(self) -> dict[ObjectId, str | None]:
        """The members decide found unchanged (their live uid by identity)."""
        return self.decisions.unchanged if self.decisions is not None else {}

    @property
    def namespace_to_create(self) -> str | None:
        return self.decisions.namespace_to_create if self.decisions is not None else None

    def listed(self, key: ObjectId) -> KubeObject:
        """The live object ``key`` as list-live saw it (a member found unchanged always was)."""
        if self.live is None:
            raise StepOrderError("a member's apply reads the live objects before the list-live step ran")
        return self.live.objects[key].obj


def of_run(ctx: RunContext) -> MemberApply:
    """What the members' applies of the step running over ``ctx`` read, taken now."""
    return MemberApply(client=ctx.client, opts=ctx.apply_options, parent_id=ctx.parent.id,
                       member_record=ctx.parent.member_record,
                       home_namespace=namespaces.home(ctx.parent, ctx.namespace),
                       live=ctx.live if ctx.has("live") else None,
                       decisions=ctx.decisions if ctx.has("decisions") else None,
                       set_managers=frozenset(ctx.set_managers), carried=ctx.carried)
