"""Selecting a legacy `kubectl apply --prune -l` set's objects (legacy.py)."""

from __future__ import annotations

import pytest

from applyset.rules import legacy
from applyset import spec
from applyset.errors import InputError
from applyset.kube.discovery import Resource

CONFIGMAP = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
ID = "applyset-ours-v1"
APPLIED = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}


def meta(name, labels=None, annotations=None):
    return {"name": name, "namespace": "shop", "uid": f"uid-{name}", "labels": labels or {"app": "shop"},
            "annotations": annotations if annotations is not None else dict(APPLIED)}


def test_only_objects_kubectl_apply_made_and_in_no_other_set_are_adopted():
    listed = [
        (CONFIGMAP, meta("applied")),
        (CONFIGMAP, meta("created-by-hand", annotations={})),
        (CONFIGMAP, meta("other-set", labels={"app": "shop", spec.LABEL_PART_OF: "applyset-other-v1"})),
        (CONFIGMAP, meta("ours-already", labels={"app": "shop", spec.LABEL_PART_OF: ID})),
    ]
    selection = legacy.select(listed, ID, legacy.LegacyAdoption("app=shop"), "secrets./shop")
    assert [m["name"] for _r, m in selection.adopted] == ["applied"]
    assert [m["name"] for _r, m in selection.not_applied] == ["created-by-hand"]
    assert [(m["name"], other) for _r, m, other in selection.elsewhere] == [("other-set", "applyset-other-v1")]


def test_helm_managed_objects_are_refused_naming_the_release_unless_allowed():
    helm = meta("chart", annotations={**APPLIED, legacy.HELM_RELEASE_NAME: "shop",
                                      legacy.HELM_RELEASE_NAMESPACE: "shop"})
    by_label = meta("chart2", labels={"app": "shop", "app.kubernetes.io/managed-by": "Helm",
                                      "app.kubernetes.io/instance": "shop-old"})
    with pytest.raises(InputError) as caught:
        legacy.select([(CONFIGMAP, helm), (CONFIGMAP, by_label)], ID, legacy.LegacyAdoption("app=shop"), "secrets./shop")
    assert "Helm release shop/shop" in caught.value.message and "Helm release shop-old" in caught.value.message
    allowed = legacy.select([(CONFIGMAP, helm)], ID, legacy.LegacyAdoption("app=shop", allow_helm=True), "secrets./shop")
    assert len(allowed.adopted) == 1


def test_the_default_kinds_are_kubectls_prune_allowlist():
    kinds = {str(spec.GroupKind(*gk)) for gk in legacy.LegacyAdoption("app=shop").group_kinds()}
    assert {"ConfigMap", "Deployment.apps", "Ingress.networking.k8s.io", "Namespace", "PersistentVolume"} <= kinds
    assert len(kinds) == 16
