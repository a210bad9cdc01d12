"""The prune rules (prune.py): each named rule alone, then their order."""

from __future__ import annotations

import pytest

from applyset import prune, spec
from applyset.kube import Resource
from applyset.spec import GroupKind

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
