"""engine._show_rules: each member's result names the readiness rule its own manifest asks for, also
when two members of one kind and name live in two namespaces."""

from __future__ import annotations

from applyset import engine
from applyset.inputs.manifests import Manifest
from applyset.run.report import ObjectResult, Report
from applyset.wait.expressions import READY_WHEN


def config_map(namespace, annotations=None):
    meta = {"name": "settings", "namespace": namespace, **({"annotations": annotations} if annotations else {})}
    return Manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}, f"{namespace}.yaml")


def test_members_of_one_kind_and_name_in_two_namespaces_get_their_own_rule():
    report = Report()
    for namespace in ("shop", "web"):
        report.objects.append(ObjectResult("v1", "ConfigMap", namespace, "settings", "created"))
    manifests = [config_map("shop"), config_map("web", {READY_WHEN: "has(self.data)"})]
    engine._show_rules(report, manifests, {})
    rules = {result.namespace: result.readiness_rule for result in report.objects}
    assert rules == {"shop": "none", "web": "annotation"}
