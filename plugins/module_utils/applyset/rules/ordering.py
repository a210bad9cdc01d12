"""Order inside a set: dependencies, sync waves and the kind phases, as one graph over the members.

Read from the manifests:

- ``config.kubernetes.io/depends-on`` (cli-utils' and kpt's annotation): comma-separated
  references ``group/namespaces/NAMESPACE/Kind/name``, or ``group/Kind/name`` for a cluster-scoped
  object; the core group is empty (``/namespaces/shop/ConfigMap/settings``). The object is applied
  only once each dependency is applied and ready (readiness.py's rules). A dependency outside the
  set must exist on the cluster; it is waited for until ready, never written.
- ``argocd.argoproj.io/sync-wave``: an integer, default 0; every member of a wave is applied and
  ready before any member of a later wave is applied.
- The kind phases (``plan.phase_of``) stay as implicit edges inside a wave: a phase is applied
  once the members of the earlier phases of its wave are applied (CRDs: Established).

The graph has the members, the objects outside the set that members depend on, and a ``Gate``
node per (wave, phase) so that phases and waves cost one edge per member, not one per pair.
An edge says what its target waits for: the source ``APPLIED`` or ``READY``. Gates are on
edges: a member whose own dependencies are ready goes on while another waits for a slow one.
Everything here is decided before the first write (``decide_order``, then ``unavailable`` once the
dependencies outside the set were looked for: steps/decide.py); gates.py runs it. Pure: no requests.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Union

from . import plan as plans
from .. import spec
from ..errors import InputError, InputErrors
from ..kube.discovery import Discovery, Resource
from ..object_meta import annotations_of

if TYPE_CHECKING:  # what the run and its decide step hold, named for the annotations only: both are above the rules
    from ..run.options import Options
    from ..run.records import Decisions

DEPENDS_ON = "config.kubernetes.io/depends-on"
# kapp's ordering annotations are not read (docs/user-guide.md, "Order inside a set"): a warning says so.
KAPP_ORDERING = ("kapp.k14s.io/change-group", "kapp.k14s.io/change-rule")
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# On a live member: pruned before the wait of a run with wait: true (the default is after it).
PRUNE_TIMING = spec.OWN_PREFIX + "prune-timing"
PRUNE_EARLY = "early"

APPLIED, READY = "applied", "ready"
BY_DEPENDENCY, BY_WAVE, BY_KIND = "depends-on", "sync-wave", "kind order"


class Gate(NamedTuple):
    """A node that stands for "the earlier phases of wave ``wave`` are done" before ``phase``;
    ``phase`` None stands for "all of wave ``wave`` is ready"."""

    wave: int
    phase: int | None


# A node of the graph: a member, an object outside the set it depends on, or a gate.
Node = Union[spec.ObjectId, Gate]
# An edge into a node: ``(source, APPLIED or READY, why: BY_DEPENDENCY, BY_WAVE or BY_KIND)``.
Edge = tuple[Node, str, str]


def parse_depends_on(value: str) -> list[spec.ObjectId]:
    """The references of a depends-on annotation, in order.

    Raises:
        ValueError: a reference in neither of cli-utils' two forms.
    """
    refs = []
    for part in (p.strip() for p in str(value).split(",")):
        if not part:
            continue
        fields = part.split("/")
        if len(fields) == 5 and fields[1] == "namespaces" and all(fields[2:]):
            refs.append(spec.ObjectId(fields[0], fields[3], fields[2], fields[4]))
        elif len(fields) == 3 and all(fields[1:]):
            refs.append(spec.ObjectId(fields[0], fields[1], "", fields[2]))
        else:
            raise ValueError(f"{part!r} is neither GROUP/namespaces/NAMESPACE/KIND/NAME nor GROUP/KIND/NAME")
    return refs


def wave_of(annotations: Mapping[str, str] | None) -> int:
    """The sync wave of an object's annotations (0 when none).

    Raises:
        ValueError: a value that is not an integer.
    """
    value = (annotations or {}).get(SYNC_WAVE)
    if value is None:
        return 0
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{SYNC_WAVE} must be an integer, not {value!r}") from None


def is_ordered(annotations: Mapping[str, str] | None) -> bool:
    """Whether an object carries an ordering annotation (depends-on or sync-wave)."""
    annotations = annotations or {}
    return DEPENDS_ON in annotations or SYNC_WAVE in annotations


def ref_of(key: Node) -> str:
    """How messages name a node: ``Kind namespace/name``, or what a gate stands for."""
    if isinstance(key, Gate):
        return f"sync wave {key.wave}" if key.phase is None else f"kind phase {key.phase} of wave {key.wave}"
    return f"{key.kind} {key.namespace}/{key.name}" if key.namespace else f"{key.kind} {key.name}"


def _annotations(member: plans.DesiredObject) -> dict[str, str]:
    return annotations_of(member.body)


@dataclass
class Order:
    """The graph of a run's members: ``needs[node]`` lists ``(source, APPLIED or READY, why)``;
    ``external`` maps objects outside the set that members depend on to their resource;
    ``gates`` in an order where each gate comes after the gates it needs."""

    needs: dict[Node, list[Edge]]
    external: dict[spec.ObjectId, Resource] = field(default_factory=dict)
    gates: list[Gate] = field(default_factory=list)
    waves: dict[spec.ObjectId, int] = field(default_factory=dict)  # member key -> wave
    resources: dict[spec.ObjectId, Resource] = field(default_factory=dict)  # member key -> kube.Resource

    def explicit(self, key: Node) -> list[spec.ObjectId]:
        """The dependencies ``key`` waits for by its own annotation (not waves or kinds): objects, never gates."""
        return [src for src, _need, why in self.needs.get(key, ()) if why == BY_DEPENDENCY and not isinstance(src, Gate)]

    def gated(self, key: Node) -> bool:
        """Whether ``key`` waits for another object to be ready before it is applied."""
        return any(need == READY for _src, need, _why in self._flat(key))

    def _flat(self, key: Node, seen: set[Gate] | None = None) -> Iterator[Edge]:
        """The edges into ``key``, through gates."""
        seen = set() if seen is None else seen
        for src, need, why in self.needs.get(key, ()):
            if isinstance(src, Gate):
                if src not in seen:
                    seen.add(src)
                    yield from self._flat(src, seen)
            else:
                yield src, need, why


def build(members: list[plans.DesiredObject], discovery: Discovery) -> Order:
    """The graph of ``members`` (``plan.DesiredObject``, in plan order).

    Raises:
        InputErrors: malformed annotations, references to kinds the server does not serve, or
            to a namespaced kind in the cluster-scoped form (and the reverse); all at once.
    """
    problems: list[InputError] = []
    order = Order(needs={})
    keys = {m.key: m for m in members}
    by_wave: dict[int, dict[int, list[plans.DesiredObject]]] = {}
    for m in members:
        where = f"{m.manifest.source} ({m.ref})"
        try:
            wave = wave_of(_annotations(m))
        except ValueError as err:
            problems.append(InputError(str(err), obj=where, fix=f"write an integer, e.g. {SYNC_WAVE}: \"-1\""))
            wave = 0
        order.waves[m.key] = wave
        order.resources[m.key] = m.resource
        by_wave.setdefault(wave, {}).setdefault(plans.phase_of(m.rank), []).append(m)
        order.needs[m.key] = []
        _add_dependencies(order, m, keys, discovery, problems)
    if problems:
        raise InputErrors(problems)
    _add_phases_and_waves(order, by_wave, _floating(order, keys))
    return order


def _floating(order: Order, keys: dict[spec.ObjectId, plans.DesiredObject]) -> set[spec.ObjectId]:
    """Members that depend (through depends-on, in their own wave) on a member of a later kind
    phase: the explicit edge wins over the kind order, so later phases do not wait for them.
    CRDs and Namespaces never float: what follows them cannot be applied before them."""
    phase = {k: plans.phase_of(m.rank) for k, m in keys.items()}
    reach: dict[spec.ObjectId, int] = {}

    def highest(key: spec.ObjectId, visiting: frozenset[spec.ObjectId] = frozenset()) -> int:
        if key not in reach:
            deps = [d for d in order.explicit(key) if d in keys and d not in visiting
                    and order.waves[d] == order.waves[key]]
            reach[key] = max([phase[key]] + [highest(d, visiting | {key}) for d in deps])
        return reach[key]

    return {k for k in keys if phase[k] > 1 and highest(k) > phase[k]}


def _add_dependencies(order: Order, member: plans.DesiredObject, keys: dict[spec.ObjectId, plans.DesiredObject],
                      discovery: Discovery, problems: list[InputError]) -> None:
    value = _annotations(member).get(DEPENDS_ON)
    if value is None:
        return
    where = f"{member.manifest.source} ({member.ref})"
    try:
        refs = parse_depends_on(value)
    except ValueError as err:
        problems.append(InputError(f"annotation {DEPENDS_ON}: {err}", obj=where,
                                   fix="write group/namespaces/NAMESPACE/Kind/name, or group/Kind/name for a "
                                       "cluster-scoped object; the core group is empty (/namespaces/ns/ConfigMap/x)"))
        return
    for ref in refs:
        if ref in keys:
            order.needs[member.key].append((ref, READY, BY_DEPENDENCY))
            continue
        res = discovery.for_group_kind(ref.group_kind)
        if res is None or res.namespaced != bool(ref.namespace):
            why = (f"the server serves no kind {ref.kind} in group {ref.group or '(core)'}" if res is None else
                   f"{ref.kind} is {'namespaced' if res.namespaced else 'cluster-scoped'}")
            problems.append(InputError(
                f"annotation {DEPENDS_ON} names {ref_of(ref)}: {why}", obj=where,
                fix="check the group and kind; a namespaced object is group/namespaces/NAMESPACE/Kind/name, a "
                    "cluster-scoped one group/Kind/name"))
            continue
        order.external[ref] = res
        order.needs[member.key].append((ref, READY, BY_DEPENDENCY))


def _add_phases_and_waves(order: Order, by_wave: dict[int, dict[int, list[plans.DesiredObject]]],
                          floating: set[spec.ObjectId]) -> None:
    """Gate nodes: each phase of a wave waits for the earlier phases applied (CRDs ready; not the
    ``floating`` members), each wave for every member of the wave before it ready."""
    previous_done = None
    waves = sorted(by_wave)
    for index, wave in enumerate(waves):
        phases = sorted(by_wave[wave])
        before: list[Edge] = [(previous_done, APPLIED, BY_WAVE)] if previous_done is not None else []
        for position, phase in enumerate(phases):
            gate = Gate(wave, phase)
            needs = list(before)
            if position:
                prior = phases[position - 1]
                needs.append((Gate(wave, prior), APPLIED, BY_KIND))
                needs += [(m.key, READY if m.resource.group_kind == spec.CRD_KIND else APPLIED, BY_KIND)
                          for m in by_wave[wave][prior] if m.key not in floating]
            order.needs[gate] = needs
            order.gates.append(gate)
            for m in by_wave[wave][phase]:
                order.needs[m.key].append((gate, APPLIED, BY_KIND))
        if index + 1 < len(waves):
            done = Gate(wave, None)
            order.needs[done] = [(Gate(wave, phases[-1]), APPLIED, BY_WAVE)] + [
                (m.key, READY, BY_WAVE) for phase in phases for m in by_wave[wave][phase]]
            order.gates.append(done)
            previous_done = done


def find_cycle(order: Order) -> list[Node] | None:
    """A cycle of the graph as its nodes in order (each waits for the next), or None."""
    state: dict[Node, int] = {}
    for start in order.needs:
        if start in state:
            continue
        stack = [(start, iter(order.needs.get(start, ())))]
        path, state[start] = [start], 1
        while stack:
            node, edges = stack[-1]
            edge = next(edges, None)
            if edge is None:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            src = edge[0]
            if state.get(src) == 1:
                return path[path.index(src):]
            if src not in state and src in order.needs:
                state[src] = 1
                path.append(src)
                stack.append((src, iter(order.needs[src])))
    return None


def cycle_error(order: Order, cycle: list[Node], members: Mapping[Node, plans.DesiredObject]) -> InputError:
    """The refusal of a cycle, naming every object in it and how each waits for the next."""
    steps = []
    for i, node in enumerate(cycle):
        nxt = cycle[(i + 1) % len(cycle)]
        why = next((w for src, _n, w in order.needs.get(node, ()) if src == nxt), BY_KIND)
        steps.append(f"{ref_of(node)} waits for {ref_of(nxt)} ({why})")
    named = [n for n in cycle if not isinstance(n, Gate)]
    first = members.get(named[0]) if named else None
    return InputError(
        "the objects wait for each other in a cycle, so none of them could ever be applied: " + "; ".join(steps),
        obj=f"{first.manifest.source} ({first.ref})" if first is not None else ", ".join(map(ref_of, named)),
        fix=f"remove one {DEPENDS_ON} reference of the cycle; inside a sync wave the kinds keep their order "
            "(CRDs, Namespaces, configuration, workloads, webhooks), so an object that must come before a "
            f"kind applied earlier goes into an earlier wave ({SYNC_WAVE})")


# ----- before the first write ---------------------------------------------------------------------


def decide_order(members: list[plans.DesiredObject], discovery: Discovery) -> Order | None:
    """The ``Order`` of ``members`` (``plan.DesiredObject``, in plan order), or None when no member
    carries an ordering annotation (the kind phases alone then order the apply, as before). The
    dependencies outside the set (``Order.external``) are still to be found on the cluster
    (``unavailable``).

    Raises:
        InputErrors: malformed annotations, or a cycle; each names the objects and the fix.
    """
    if not any(is_ordered(_annotations(m)) for m in members):
        return None
    order = build(members, discovery)
    cycle = find_cycle(order)
    if cycle is not None:
        raise InputErrors([cycle_error(order, cycle, {m.key: m for m in members})])
    return order


def unavailable(order: Order, members: list[plans.DesiredObject], absent: frozenset[spec.ObjectId],
                pruned: frozenset[spec.ObjectId] = frozenset()) -> list[InputError]:
    """The refusals of dependencies outside the set that the run cannot wait for, in the order of
    their identities: one for each member that waits for one.

    Args:
        absent: identities of the dependencies outside the set that are not on the cluster.
        pruned: identities of the live members this run prunes.
    """
    problems = []
    for key in sorted(order.external):
        if key not in absent and key not in pruned:
            continue
        waiters = [m for m in members if key in order.explicit(m.key)]
        why = "which this run prunes (it left the manifests)" if key in pruned else \
            "which is neither in the set nor on the cluster"
        problems += [InputError(
            f"{m.ref} depends on {ref_of(key)} ({DEPENDS_ON}), {why}", obj=f"{m.manifest.source} ({m.ref})",
            fix=f"add {ref_of(key)} to the set, create it first, or remove it from {DEPENDS_ON}") for m in waiters]
    return problems


def describe(order: Order, members: list[plans.DesiredObject], opts: Options) -> list[str]:
    """The order a real run takes, as lines for the result (``order``) and for check mode."""
    lines = []
    waves = sorted(set(order.waves.values()))
    if len(waves) > 1:
        for wave in waves:
            named = ", ".join(m.ref for m in members if order.waves[m.key] == wave)
            then = "; applied and ready before the next wave" if wave != waves[-1] else ""
            lines.append(f"sync wave {wave}: {named}{then}")
    for m in members:
        for dep in order.explicit(m.key):
            # An object outside the set is never applied by this run: only waited for.
            need = "(outside the set) to be ready: waited for, not applied" if dep in order.external \
                else "to be applied and ready"
            lines.append(f"{m.ref} waits for {ref_of(dep)} {need} ({DEPENDS_ON})")
    if opts.waiting.enabled and opts.prune:
        lines.append("prune once every applied object is ready (wait: true)")
    return lines


def gated_change(decisions: Decisions, plan: plans.Plan) -> bool:
    """Whether a member this run sends waits for another object to be ready: such a run takes
    the claim's route, whose apply step holds the gates (the update-only route holds none)."""
    order = decisions.order
    return order is not None and any(m.key not in decisions.unchanged and order.gated(m.key) for m in plan.members)


def unread(members: list[plans.DesiredObject]) -> list[str]:
    """Warnings for members whose ordering annotations of other tools are not honoured (kapp's)."""
    warnings = []
    for m in members:
        found = [k for k in _annotations(m) if k.startswith(KAPP_ORDERING)]
        if found:
            warnings.append(f"{m.ref}: {', '.join(sorted(found))} not honoured (kapp's change groups are not read); "
                            f"write the order as {DEPENDS_ON} or {SYNC_WAVE}")
    return warnings
