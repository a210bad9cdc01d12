"""ordering.py and prune_order.py: depends-on and sync-wave parsing, the graph, cycles, prune stages."""

import pytest
from applyset.rules import ordering, plan, prune_order
from applyset.errors import InputErrors
from applyset.kube.discovery import Discovery, Resource
from applyset.inputs.manifests import load_definition
from applyset.rules.prune import Decision
from applyset.spec import ObjectId

RESOURCES = [
    Resource("", "v1", "ConfigMap", "configmaps", True),
    Resource("", "v1", "Namespace", "namespaces", False),
    Resource("apps", "v1", "Deployment", "deployments", True),
    Resource("batch", "v1", "Job", "jobs", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
]
DISCOVERY = Discovery(list(RESOURCES))
DEPENDS_ON, WAVE = ordering.DEPENDS_ON, ordering.SYNC_WAVE


def obj(kind, name, api="v1", **annotations):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "annotations": annotations}}


def graph(docs):
    members = plan.build(load_definition(docs), DISCOVERY, "applyset-x-v1", "shop").members
    return ordering.build(members, DISCOVERY), {m.key: m for m in members}


def key(kind, name, group="", namespace="shop"):
    return ObjectId(group, kind, namespace, name)


@pytest.mark.parametrize("value, expected", [
    ("batch/namespaces/shop/Job/migrate", [key("Job", "migrate", "batch")]),
    ("/namespaces/shop/ConfigMap/a, /namespaces/shop/ConfigMap/b",
     [key("ConfigMap", "a"), key("ConfigMap", "b")]),
    ("rbac.authorization.k8s.io/ClusterRole/reader", [key("ClusterRole", "reader", "rbac.authorization.k8s.io", "")]),
    ("", []),
])
def test_depends_on_is_read_in_cli_utils_format(value, expected):
    assert ordering.parse_depends_on(value) == expected


@pytest.mark.parametrize("value", ["Job/migrate", "batch/namespaces/Job/migrate", "batch/ns/shop/Job/x", "a/b/"])
def test_a_malformed_reference_is_refused(value):
    with pytest.raises(ValueError, match="neither"):
        ordering.parse_depends_on(value)


def test_waves_are_integers_default_zero():
    assert ordering.wave_of({}) == 0 and ordering.wave_of({WAVE: "-2"}) == -2 and ordering.wave_of({WAVE: " 3"}) == 3
    with pytest.raises(ValueError, match="integer"):
        ordering.wave_of({WAVE: "first"})


def test_a_dependency_in_the_set_is_a_ready_edge_and_kinds_stay_ordered():
    order, _ = graph([obj("Deployment", "web", "apps/v1", **{DEPENDS_ON: "batch/namespaces/shop/Job/migrate"}),
                      obj("Job", "migrate", "batch/v1"), obj("ConfigMap", "cfg")])
    assert order.explicit(key("Deployment", "web", "apps")) == [key("Job", "migrate", "batch")]
    assert order.gated(key("Deployment", "web", "apps")) and not order.gated(key("Job", "migrate", "batch"))
    assert ordering.find_cycle(order) is None
    # The Job (phase 3) still waits for the ConfigMap (phase 2) to be applied, not ready.
    flat = list(order._flat(key("Job", "migrate", "batch")))
    assert (key("ConfigMap", "cfg"), ordering.APPLIED, ordering.BY_KIND) in flat


def test_a_later_wave_waits_for_every_member_of_the_earlier_one_ready():
    order, _ = graph([obj("ConfigMap", "late"), obj("Job", "first", "batch/v1", **{WAVE: "-1"})])
    assert order.gated(key("ConfigMap", "late"))
    assert (key("Job", "first", "batch"), ordering.READY, ordering.BY_WAVE) in list(order._flat(key("ConfigMap",
                                                                                                   "late")))


def test_a_cycle_is_found_and_named():
    order, members = graph([obj("ConfigMap", "a", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/b"}),
                            obj("ConfigMap", "b", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/a"})])
    cycle = ordering.find_cycle(order)
    err = ordering.cycle_error(order, cycle, members)
    assert "ConfigMap shop/a waits for ConfigMap shop/b (depends-on)" in str(err)
    assert "ConfigMap shop/b waits for ConfigMap shop/a (depends-on)" in str(err)


def test_an_explicit_edge_against_the_kind_order_wins_over_it():
    # A ConfigMap that depends on a Deployment: applied after it; no cycle through the kind phases.
    order, _ = graph([obj("ConfigMap", "after", **{DEPENDS_ON: "apps/namespaces/shop/Deployment/web"}),
                      obj("Deployment", "web", "apps/v1")])
    assert ordering.find_cycle(order) is None


def test_a_wave_against_a_dependency_is_a_cycle():
    order, _ = graph([obj("ConfigMap", "a", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/b"}),
                      obj("ConfigMap", "b", **{WAVE: "1"})])
    assert ordering.find_cycle(order) is not None


def test_bad_annotations_and_unknown_kinds_are_input_errors():
    with pytest.raises(InputErrors) as caught:
        graph([obj("ConfigMap", "a", **{WAVE: "x"}), obj("ConfigMap", "b", **{DEPENDS_ON: "Job/x"}),
               obj("ConfigMap", "c", **{DEPENDS_ON: "example.com/namespaces/shop/Gadget/g"}),
               obj("ConfigMap", "d", **{DEPENDS_ON: "/ConfigMap/cluster-scoped-form"})])
    text = str(caught.value)
    assert "4 problems" in text and "must be an integer" in text and "no kind Gadget" in text
    assert "ConfigMap is namespaced" in text


def test_an_external_dependency_is_recorded_with_its_resource():
    order, _ = graph([obj("ConfigMap", "a", **{DEPENDS_ON: "batch/namespaces/db/Job/schema"})])
    assert list(order.external) == [ObjectId("batch", "Job", "db", "schema")]


def _decision(kind, name, **annotations):
    res = next(r for r in RESOURCES if r.kind == kind)
    return Decision(res, {"name": name, "namespace": "shop", "uid": name, "annotations": annotations}, "prune", "")


def test_prune_stages_delete_dependents_first_and_higher_waves_first():
    base, user = _decision("ConfigMap", "base"), _decision("ConfigMap", "user", **{DEPENDS_ON:
                                                                                   "/namespaces/shop/ConfigMap/base"})
    early, plain = _decision("ConfigMap", "w1", **{WAVE: "1"}), _decision("ConfigMap", "plain")
    stages = prune_order.stages([base, user, early, plain])
    assert [[d.meta["name"] for d in stage] for stage in stages] == [["w1"], ["user", "plain"], ["base"]]


def test_prune_without_ordering_annotations_is_one_stage():
    decisions = [_decision("ConfigMap", "a"), _decision("Deployment", "b")]
    assert prune_order.stages(decisions) == [decisions]
    assert prune_order.stages([]) == []


def test_prune_early_is_read_from_the_live_annotation():
    assert prune_order.is_early({"annotations": {ordering.PRUNE_TIMING: "early"}})
    assert not prune_order.is_early({"annotations": {}}) and not prune_order.is_early({})


class _Decisions:
    def __init__(self, order, unchanged):
        self.order, self.unchanged = order, unchanged


class _Plan:
    def __init__(self, members):
        self.members = members


def test_only_a_changed_member_that_waits_sends_the_run_to_the_claims_route():
    order, members = graph([obj("Deployment", "web", "apps/v1", **{DEPENDS_ON: "batch/namespaces/shop/Job/migrate"}),
                            obj("Job", "migrate", "batch/v1")])
    plan_ = _Plan(list(members.values()))
    web, migrate = key("Deployment", "web", "apps"), key("Job", "migrate", "batch")
    assert not ordering.gated_change(_Decisions(order, {web: "u1", migrate: "u2"}), plan_)  # a no-op
    assert not ordering.gated_change(_Decisions(order, {web: "u1"}), plan_)  # only the dependency changes
    assert ordering.gated_change(_Decisions(order, {migrate: "u2"}), plan_)  # the dependent changes
    assert not ordering.gated_change(_Decisions(None, {}), plan_)  # no order at all


def test_kapp_change_groups_are_warned_as_not_read():
    members = plan.build(load_definition([obj("ConfigMap", "a", **{"kapp.k14s.io/change-group": "db"})]),
                         DISCOVERY, "applyset-x-v1", "shop").members
    assert ordering.unread(members) == [
        "ConfigMap shop/a: kapp.k14s.io/change-group not honoured (kapp's change groups are not read); write the "
        "order as config.kubernetes.io/depends-on or argocd.argoproj.io/sync-wave"]


def test_the_order_is_decided_from_the_members_alone_and_none_when_nothing_is_ordered():
    members = plan.build(load_definition([obj("ConfigMap", "a"), obj("Job", "migrate", "batch/v1")]), DISCOVERY,
                         "applyset-x-v1", "shop").members
    assert ordering.decide_order(members, DISCOVERY) is None
    _, by_key = graph([obj("ConfigMap", "a", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/b"}),
                       obj("ConfigMap", "b", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/a"})])
    with pytest.raises(InputErrors, match="cycle"):
        ordering.decide_order(list(by_key.values()), DISCOVERY)


def test_a_dependency_outside_the_set_that_is_absent_or_pruned_is_refused_for_each_member_waiting():
    order, by_key = graph([obj("ConfigMap", "a", **{DEPENDS_ON: "batch/namespaces/db/Job/schema"}),
                           obj("ConfigMap", "b", **{DEPENDS_ON: "/namespaces/shop/ConfigMap/old"})])
    members = list(by_key.values())
    schema, old = ObjectId("batch", "Job", "db", "schema"), key("ConfigMap", "old")
    assert ordering.unavailable(order, members, absent=frozenset()) == []
    problems = ordering.unavailable(order, members, absent=frozenset({schema, old}), pruned=frozenset({old}))
    # in the order of the dependencies' identities: the core group's ConfigMap before batch's Job
    assert [(p.obj, "prunes" in str(p)) for p in problems] == [
        ("definition item 2 (ConfigMap shop/b)", True), ("definition item 1 (ConfigMap shop/a)", False)]
