"""The prune rules (prune.py): each named rule alone, then their order."""

from __future__ import annotations

import pytest

from applyset.rules import prune
from applyset import spec
from applyset.kube.discovery import Resource
from applyset.spec import GroupKind
from applyset.run.options import GuardLimits

ID = "applyset-abc-v1"
EVENT = Resource(group="", version="v1", kind="Event", plural="events", namespaced=True)
EVENT_NEW = Resource(group="events.k8s.io", version="v1", kind="Event", plural="events", namespaced=True)
CONFIGMAP = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
NAMESPACE = Resource(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)


def meta(name="x", namespace="shop", uid="uid-1", labels=None, annotations=None, owners=None):
    data = {"name": name, "uid": uid, "labels": {spec.LABEL_PART_OF: ID} if labels is None else labels,
            "annotations": annotations or {}}
    if namespace:
        data["namespace"] = namespace
    if owners:
        data["ownerReferences"] = owners
    return data


def ctx(kinds=("Event", "Event.events.k8s.io", "ConfigMap", "Namespace"), namespaces=("shop",),
        applied=(), parent_uid="parent-uid"):
    scope = prune.scope_of(spec.parse_group_kinds(",".join(kinds)), namespaces)
    return prune.Context(applyset_id=ID, parent_uid=parent_uid, scope=scope, applied_uids=frozenset(applied))


def test_a_plain_member_in_scope_is_pruned():
    decision = prune.decide(CONFIGMAP, meta(), ctx())
    assert (decision.verdict, decision.rule) == (prune.PRUNE, "prune")


def test_not_in_set_another_sets_label_is_ignored():
    decision = prune.decide(CONFIGMAP, meta(labels={spec.LABEL_PART_OF: "applyset-other-v1"}), ctx())
    assert (decision.verdict, decision.rule) == (prune.IGNORE, "not_in_set")


@pytest.mark.parametrize("res, namespace, kinds, namespaces", [
    (CONFIGMAP, "shop", ("Event",), ("shop",)),  # kind new in this run
    (CONFIGMAP, "other", ("ConfigMap",), ("shop",)),  # namespace new in this run
    (NAMESPACE, None, ("ConfigMap",), ("shop",)),  # cluster-scoped kind not recorded
])
def test_outside_the_recorded_scope_is_ignored(res, namespace, kinds, namespaces):
    decision = prune.decide(res, meta(namespace=namespace), ctx(kinds=kinds, namespaces=namespaces))
    assert (decision.verdict, decision.rule) == (prune.IGNORE, "outside_recorded_scope")


def test_a_cluster_scoped_kind_in_scope_needs_no_namespace():
    decision = prune.decide(NAMESPACE, meta(namespace=None), ctx(namespaces=()))
    assert decision.verdict == prune.PRUNE


def test_the_uid_applied_in_this_run_is_never_pruned_whatever_group_it_was_listed_under():
    # The Event applied as v1 is listed again as events.k8s.io/v1: same UID, same object.
    decision = prune.decide(EVENT_NEW, meta(name="ev1", uid="uid-ev1"), ctx(applied={"uid-ev1"}))
    assert (decision.verdict, decision.rule) == (prune.IGNORE, "applied_in_this_run")
    other = prune.decide(EVENT_NEW, meta(name="ev2", uid="uid-ev2"), ctx(applied={"uid-ev1"}))
    assert other.verdict == prune.PRUNE


def test_the_uid_rule_comes_before_the_keep_rule():
    # The keep rule takes an object out of the set (removes its label): never one just applied.
    protected = meta(uid="uid-ev1", annotations={"kapp.k14s.io/delete-strategy": "orphan"})
    decision = prune.decide(EVENT_NEW, protected, ctx(applied={"uid-ev1"}))
    assert decision.rule == "applied_in_this_run"


def test_a_member_without_uid_is_not_matched_by_the_uid_rule():
    decision = prune.decide(CONFIGMAP, meta(uid=None), ctx(applied={None, ""}))
    assert decision.verdict == prune.PRUNE


@pytest.mark.parametrize("annotations", [
    {spec.ANNOTATION_KEEP: "disabled"},
    {"kustomize.toolkit.fluxcd.io/prune": "disabled"},
    {"argocd.argoproj.io/sync-options": "Prune=false"},
    {"helm.sh/resource-policy": "keep"},
])
def test_protection_annotations_keep(annotations):
    decision = prune.decide(CONFIGMAP, meta(annotations=annotations), ctx())
    assert (decision.verdict, decision.rule) == (prune.KEEP, "kept_by_annotation")
    assert decision.reason


def test_a_foreign_controller_skips_and_the_parent_as_controller_does_not():
    foreign = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}]
    decision = prune.decide(CONFIGMAP, meta(owners=foreign), ctx())
    assert (decision.verdict, decision.rule) == (prune.SKIP, "controlled_by_other")
    assert "ReplicaSet web-1" in decision.reason
    by_parent = [{"kind": "Secret", "name": "shop", "uid": "parent-uid", "controller": True}]
    assert prune.decide(CONFIGMAP, meta(owners=by_parent), ctx()).verdict == prune.PRUNE
    not_controller = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs"}]
    assert prune.decide(CONFIGMAP, meta(owners=not_controller), ctx()).verdict == prune.PRUNE


def test_decide_all_groups_the_decisions():
    candidates = [
        (CONFIGMAP, meta(name="a", uid="a")),
        (CONFIGMAP, meta(name="b", uid="b", annotations={spec.ANNOTATION_KEEP: "disabled"})),
        (CONFIGMAP, meta(name="c", uid="c", owners=[{"kind": "X", "name": "y", "uid": "z", "controller": True}])),
        (EVENT_NEW, meta(name="d", uid="d")),
    ]
    decisions = prune.decide_all(candidates, ctx(applied={"d"}))
    assert [m["name"] for _res, m in decisions.delete] == ["a"]
    assert [m["name"] for _res, m, _why in decisions.keep] == ["b"]
    assert [m["name"] for _res, m, _why in decisions.skip] == ["c"]
    assert [d.meta["name"] for d in decisions.with_verdict(prune.IGNORE)] == ["d"]


def test_the_first_rule_that_matches_decides_in_the_documented_order():
    """A candidate that every rule matches, made to miss one rule more at each step: the rule
    that decides is each time the next in the documented order."""
    foreign_owner = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}]
    candidate = {"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}, "namespace": "elsewhere", "uid": "applied",
                 "annotations": {spec.ANNOTATION_KEEP: "disabled"}, "owners": foreign_owner}
    steps = [("not_in_set", {"labels": None}), ("outside_recorded_scope", {"namespace": "shop"}),
             ("applied_in_this_run", {"uid": "fresh"}), ("kept_by_annotation", {"annotations": {}}),
             ("controlled_by_other", {"owners": None}), ("prune", {})]
    decided = []
    for _rule, next_change in steps:
        decided.append(prune.decide(CONFIGMAP, meta(**candidate), ctx(applied={"applied"})).rule)
        candidate.update(next_change)
    assert decided == [rule for rule, _change in steps]


def test_scope_covers_by_group_kind_not_version():
    scope = prune.scope_of({GroupKind("", "Event")}, {"shop"})
    assert scope.covers(EVENT, "shop")
    assert not scope.covers(EVENT_NEW, "shop")


# ----- the blast-radius guard and the overlap rule ---------------------------------------------

CRD = Resource(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition",
               plural="customresourcedefinitions", namespaced=False)
LIMITS = GuardLimits()


def configmaps(count):
    return [(CONFIGMAP, meta(name=f"cm-{i}", uid=f"u-{i}")) for i in range(count)]


def test_the_guard_lets_a_small_prune_through():
    assert prune.guard(configmaps(1), set_size=4, emptying=False, limits=LIMITS) is None


def test_an_empty_desired_set_is_refused_unless_allowed():
    refusal = prune.guard(configmaps(2), set_size=2, emptying=True, limits=LIMITS)
    assert refusal.rule == "refuse_emptying"
    assert refusal.message == "the desired set is empty, so every member would be pruned (2 objects)"
    assert "guard.allow_empty: true" in refusal.fix
    assert refusal.details == {"would_prune": ["ConfigMap shop/cm-0", "ConfigMap shop/cm-1"]}
    assert prune.guard(configmaps(2), 2, True, GuardLimits(allow_empty=True)) is None


def test_an_empty_desired_set_with_nothing_to_prune_names_no_count():
    refusal = prune.guard([], set_size=0, emptying=True, limits=LIMITS)
    assert refusal.message == "the desired set is empty, so every member would be pruned"


@pytest.mark.parametrize("allowed, refused", [
    (frozenset(), True),
    (frozenset({"Namespace"}), False),  # by Kind
    (frozenset({"CustomResourceDefinition.apiextensions.k8s.io"}), True),  # another kind, by Kind.group
])
def test_protected_kinds_are_refused_unless_their_kind_is_allowed(allowed, refused):
    delete = [(NAMESPACE, meta(name="shop", namespace=None))] + configmaps(1)
    refusal = prune.guard(delete, set_size=10, emptying=False,
                          limits=GuardLimits(allow_prune_kinds=allowed))
    if not refused:
        assert refusal is None
        return
    assert refusal.rule == "refuse_protected_kinds"
    assert refusal.message == "pruning would delete protected objects: Namespace shop"
    assert refusal.details == {"would_prune": ["Namespace shop", "ConfigMap shop/cm-0"]}


def test_a_protected_kind_is_allowed_by_kind_and_group():
    delete = [(CRD, meta(name="widgets.example.com", namespace=None))]
    limits = GuardLimits(allow_prune_kinds=frozenset({"CustomResourceDefinition.apiextensions.k8s.io"}))
    assert prune.guard(delete, set_size=10, emptying=False, limits=limits) is None


@pytest.mark.parametrize("pruned, set_size, percent, refused", [
    (2, 4, 50, False),  # exactly the limit is allowed
    (3, 4, 50, True),
    (3, 4, 100, False),
    (1, 4, 0, True),
    (5, 0, 0, False),  # no set size known: the percentage rule does not apply
])
def test_the_percentage_rule(pruned, set_size, percent, refused):
    refusal = prune.guard(configmaps(pruned), set_size, False, GuardLimits(max_prune_percent=percent))
    assert (refusal is not None) == refused
    if refused:
        assert refusal.rule == "refuse_too_many"
        assert refusal.message == (f"pruning would delete {pruned} of the set's {set_size} objects, more than "
                                   f"guard.max_prune_percent ({percent}%)")


def test_emptying_is_judged_before_protected_kinds_and_is_not_a_percentage():
    delete = [(NAMESPACE, meta(name="shop", namespace=None))]
    assert prune.guard(delete, 1, True, LIMITS).rule == "refuse_emptying"
    assert prune.guard(delete, 1, True, GuardLimits(allow_empty=True)).rule == "refuse_protected_kinds"
    allowed = GuardLimits(allow_empty=True, allow_prune_kinds=frozenset({"Namespace"}), max_prune_percent=0)
    assert prune.guard(delete, 1, True, allowed) is None


def test_guard_rules_are_in_the_documented_order():
    assert [rule.__name__ for rule in prune.GUARD_RULES] == [
        "refuse_emptying", "refuse_protected_kinds", "refuse_too_many"]


class Desired:
    def __init__(self, name):
        self.key = spec.ObjectId.of(CONFIGMAP, "shop", name)
        self.ref = f"ConfigMap shop/{name}"


def live_with(**labels_by_name):
    return {spec.ObjectId.of(CONFIGMAP, "shop", name): (CONFIGMAP, {"metadata": meta(name=name, labels=labels)})
            for name, labels in labels_by_name.items()}


def test_desired_objects_of_another_set_are_an_overlap():
    live = live_with(a={spec.LABEL_PART_OF: "applyset-other-v1"}, b={spec.LABEL_PART_OF: ID}, c={})
    desired = [Desired(name) for name in ("a", "b", "c", "new")]
    refusal = prune.overlap(desired, live, ID, adopt=False)
    assert refusal.rule == "overlap"
    assert refusal.message == "objects already belong to another ApplySet: ConfigMap shop/a (part of applyset-other-v1)"
    assert "adopt: true" in refusal.fix
    assert refusal.details == {"overlapping": ["ConfigMap shop/a (part of applyset-other-v1)"]}


def test_adopt_or_no_foreign_label_is_no_overlap():
    live = live_with(a={spec.LABEL_PART_OF: "applyset-other-v1"}, b={spec.LABEL_PART_OF: ID})
    assert prune.overlap([Desired("a")], live, ID, adopt=True) is None
    assert prune.overlap([Desired("b"), Desired("new")], live, ID, adopt=False) is None
