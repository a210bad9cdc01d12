"""plan.py: resolution, namespace defaulting, ordering and the problems found before any write."""

import pytest
from applyset.rules import plan
from applyset.errors import InputErrors
from applyset.kube.discovery import Discovery, Resource
from applyset.inputs.manifests import load_definition

RESOURCES = [
    Resource("", "v1", "ConfigMap", "configmaps", True),
    Resource("", "v1", "Namespace", "namespaces", False),
    Resource("apps", "v1", "Deployment", "deployments", True),
    Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
             "validatingwebhookconfigurations", False),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
]
ID = "applyset-test-v1"


def build(docs, namespace="default"):
    return plan.build(load_definition(docs), Discovery(list(RESOURCES)), ID, namespace)


def obj(kind, name, api="v1", **meta):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **meta}}


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com"},
       "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": True, "storage": True}]}}


def test_ranks_put_definitions_first_and_webhooks_last():
    p = build([obj("ValidatingWebhookConfiguration", "hook", "admissionregistration.k8s.io/v1"),
               obj("Deployment", "web", "apps/v1"), obj("ConfigMap", "cfg"),
               {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
               obj("Namespace", "ns"), CRD])
    order = [m.resource.kind for rank in p.ranks for m in rank]
    assert order == ["CustomResourceDefinition", "Namespace", "ConfigMap", "Deployment", "Widget",
                     "ValidatingWebhookConfiguration"]


def test_phases_put_a_barrier_only_where_one_object_needs_another_first():
    # CRDs | Namespaces | configuration up to Services | workloads and the rest | webhooks.
    assert [plan.phase_of(r) for r in range(10)] == [0, 1, 2, 2, 2, 2, 3, 3, 3, 4]
    table = {str(gk): plan.phase_of(rank) for gk, rank in plan.RANK_TABLE.items()}
    assert (table["ConfigMap"] == table["PersistentVolumeClaim"] == table["Service"]
            == table["ClusterRole.rbac.authorization.k8s.io"] == 2)
    assert (table["Deployment.apps"] == table["Job.batch"] == table["HorizontalPodAutoscaler.autoscaling"]
            == table["Ingress.networking.k8s.io"] == plan.phase_of(plan.RANK_OTHER) == 3)
    assert plan.phase_of(plan.RANK_OTHER_CLUSTER) == 2
    assert table["ValidatingWebhookConfiguration.admissionregistration.k8s.io"] == 4


def test_phases_keep_rank_order_then_input_order():
    p = build([obj("ValidatingWebhookConfiguration", "hook", "admissionregistration.k8s.io/v1"),
               {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
               obj("Deployment", "web", "apps/v1"), obj("ConfigMap", "cfg"),
               obj("ClusterRole", "reader", "rbac.authorization.k8s.io/v1"),
               obj("Deployment", "api", "apps/v1"), obj("ConfigMap", "cfg2"),
               obj("Namespace", "ns"), CRD])
    phases = [[f"{m.resource.kind}/{m.name}" for m in phase] for phase in p.phases]
    assert phases == [["CustomResourceDefinition/widgets.example.com"], ["Namespace/ns"],
                      ["ClusterRole/reader", "ConfigMap/cfg", "ConfigMap/cfg2"],
                      ["Deployment/web", "Deployment/api", "Widget/w"],
                      ["ValidatingWebhookConfiguration/hook"]]
    # The same order as the ranks, flattened: reports and prune keep their order.
    assert [m for phase in p.phases for m in phase] == [m for rank in p.ranks for m in rank]


def test_custom_resource_of_a_crd_in_the_same_set_is_resolved_from_the_crd():
    p = build([CRD, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}])
    widget = next(m for m in p.members if m.resource.kind == "Widget")
    assert widget.crd_in_set and widget.resource.plural == "widgets" and widget.namespace == "default"


def test_members_get_the_label_and_the_default_namespace_without_touching_the_input():
    docs = [obj("ConfigMap", "a", labels={"app": "x"}), obj("ConfigMap", "b", namespace="other")]
    p = build(docs, namespace="shop")
    a, b = p.members
    assert a.body["metadata"] == {"name": "a", "namespace": "shop",
                                  "labels": {"app": "x", "applyset.kubernetes.io/part-of": ID}}
    assert b.namespace == "other"
    assert p.namespaces == {"shop", "other"}
    assert "applyset.kubernetes.io/part-of" not in docs[0]["metadata"]["labels"]


def test_all_problems_are_reported_together():
    with pytest.raises(InputErrors) as err:
        build([obj("Nope", "a", "example.invalid/v1"), obj("Nope", "b", "example.invalid/v1"),
               obj("ConfigMap", "dup"), obj("ConfigMap", "dup", namespace="default")])
    text = str(err.value)
    assert "3 problems" in text
    assert "unknown kind Nope" in text and "twice" in text


def test_namespace_of_a_cluster_scoped_object_is_dropped_with_a_warning():
    # kubectl's resource builder drops it (FilterNamespace); Kubernetes' addon manifests rely on it.
    docs = [obj("ClusterRole", "reader", "rbac.authorization.k8s.io/v1", namespace="kube-system"),
            obj("Namespace", "shop", namespace=""), obj("Namespace", "other")]
    p = build(docs, namespace="shop")
    bodies = [m.body["metadata"] for m in p.members]
    assert all("namespace" not in meta for meta in bodies)
    assert p.warnings == ["definition item 1 (ClusterRole reader): metadata.namespace 'kube-system' ignored: ClusterRole is "
                          "cluster-scoped (kubectl ignores it too); remove it from the manifest"]
    assert docs[0]["metadata"]["namespace"] == "kube-system"  # the input is left alone
    assert p.namespaces == set()


def test_namespaced_object_without_any_namespace_is_refused():
    with pytest.raises(InputErrors, match="no namespace is given"):
        build([obj("ConfigMap", "a")], namespace=None)
