"""Helm's hook semantics (issue 36, item 9) against the real control plane, with charts rendered by
``helm template`` (tests/integration/data/charts/*/README.md says how): two widely used public
charts whose hook Jobs run under a ServiceAccount and RBAC that are hooks themselves
(ingress-nginx's admission webhook Jobs, cert-manager's startupapicheck), and a chart of our own.

Helm (pkg/action/hooks.go, execHook) runs a phase's hooks by weight, then kind in install order,
then name, waits for each, and deletes the ``hook-succeeded`` ones only once every hook of the
phase succeeded, last first; deleting each as soon as it was done removed the Job's
ServiceAccount before the Job's pod was created, and the install timed out. kwok runs the pods,
so the Jobs complete here as soon as their pods can be created. Each chart is installed, upgraded
(a member changed, so the pre-/post-upgrade hooks run) and uninstalled through the engine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402

CHARTS = Path(__file__).resolve().parent / "data" / "charts"
RENDERED_NAMESPACE = "helm-hooks-ns"  # the --namespace each chart was rendered with, replaced by the test's
SUCCEEDED = "hook-succeeded"

# Per chart: the member changed to make the second run an upgrade, and the hooks (phase, kind,
# name) the install and the upgrade must run, in Helm's order.
ADMISSION_RBAC = [(kind, "ingress-nginx-admission") for kind in
                  ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")]
OWN_CHART_PRE = [("ServiceAccount", "release-migrator"), ("Role", "release-migrator"),
                 ("RoleBinding", "release-migrator"), ("Job", "release-a-migrate"), ("Job", "release-z-verify")]
CASES = {
    "hook-order": {
        "member": "release-settings",
        "install": [("pre-apply", *h) for h in OWN_CHART_PRE] + [("post-apply", "Job", "release-smoke")],
    },
    "ingress-nginx": {
        "member": "ingress-nginx-controller",
        "install": [("pre-apply", *h) for h in ADMISSION_RBAC + [("Job", "ingress-nginx-admission-create")]]
        + [("post-apply", *h) for h in ADMISSION_RBAC + [("Job", "ingress-nginx-admission-patch")]],
    },
    "cert-manager": {
        "member": "cert-manager",  # its controller's ServiceAccount
        "install": [("post-apply", "ServiceAccount", "cert-manager-startupapicheck"),
                    ("post-apply", "Role", "cert-manager-startupapicheck:create-cert"),
                    ("post-apply", "RoleBinding", "cert-manager-startupapicheck:create-cert"),
                    ("post-apply", "Job", "cert-manager-startupapicheck")],
        "upgrade": [],  # its hooks are post-install only
    },
}


def rendered(chart: str, namespace: str) -> list:
    text = (CHARTS / chart / "rendered.yaml").read_text().replace(RENDERED_NAMESPACE, namespace)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def upgraded(objects: list, member: str) -> list:
    """The same release with one member (a ServiceAccount or ConfigMap, no hook) labelled anew: a
    second run that writes, so an upgrade."""
    for obj in objects:
        meta = obj["metadata"]
        if meta["name"] == member and "helm.sh/hook" not in (meta.get("annotations") or {}):
            meta["labels"] = {**(meta.get("labels") or {}), "applyset-test/upgrade": "2"}
            return objects
    raise AssertionError(f"no member {member} in the rendered chart")


class Recorder:
    """The client's requests on hook objects, in the order sent: (verb, kind plural, name)."""

    def __init__(self, client, names: set):
        self.log, self.names, self._send = [], names, client.send
        client.send = self.send

    def send(self, req):
        parts = unquote(req.path.split("?")[0].rstrip("/")).split("/")
        if req.method in ("PATCH", "DELETE") and parts[-1] in self.names and "dryRun" not in dict(req.query):
            self.log.append(("apply" if req.method == "PATCH" else "delete", parts[-2], parts[-1]))
        return self._send(req)


def run(cluster, namespace: str, objects: list, *, state: str = "present"):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    recorder = Recorder(client, {o["metadata"]["name"] for o in objects})
    runner = engine.Engine(client, "secrets/release", namespace, Options.from_settings(wait_timeout=60))
    definition = manifests.load_definition(objects)
    report = runner.uninstall(definition) if state == "absent" else runner.apply(definition)
    return report, recorder.log


def plural(kind: str) -> str:
    return kind.lower() + "s"  # enough for the kinds these charts' hooks have


def assert_helm_semantics(hooks: list, log: list, expected: list) -> None:
    """Each hook ran in Helm's order and completed; the hook-succeeded ones of a phase were deleted
    only after its last hook had completed, last run first (and an earlier run's object before
    its hook was created again)."""
    assert [(h["phase"], h["kind"], h["name"]) for h in hooks] == expected
    assert all(h["action"] == "completed" for h in hooks), hooks
    wanted = []
    for phase in dict.fromkeys(h["phase"] for h in hooks):
        ran = [h for h in hooks if h["phase"] == phase]
        for h in ran:
            wanted += [("delete", plural(h["kind"]), h["name"])] * bool(h.get("replaced"))
            wanted.append(("apply", plural(h["kind"]), h["name"]))
        wanted += [("delete", plural(h["kind"]), h["name"]) for h in reversed(ran) if SUCCEEDED in h["delete_policy"]]
        assert all(h["deleted"] for h in ran if SUCCEEDED in h["delete_policy"]), ran
    hook_objects = {(plural(h["kind"]), h["name"]) for h in hooks}
    assert [entry for entry in log if entry[1:] in hook_objects] == wanted


@pytest.mark.parametrize("chart", sorted(CASES))
def test_a_rendered_chart_with_hooks_installs_upgrades_and_uninstalls_as_with_helm(chart, cluster, kube, namespace):
    case = CASES[chart]
    try:
        report, log = run(cluster, namespace, rendered(chart, namespace))
        assert_helm_semantics(report.hooks, log, case["install"])
        for hook in report.hooks:  # deleted after its phase, none left behind
            if hook["kind"] in ("ServiceAccount", "Job") and SUCCEEDED in hook["delete_policy"]:
                group = "/apis/batch/v1" if hook["kind"] == "Job" else "/api/v1"
                path = f"{group}/namespaces/{namespace}/{plural(hook['kind'])}/{hook['name']}"
                assert kube.request("GET", path)[0] == 404, path
        print(f"{chart} install: {len(report.hooks)} hooks, {report.requests}")

        # A second run that changes a member is an upgrade: the pre-/post-upgrade hooks run again.
        report, log = run(cluster, namespace, upgraded(rendered(chart, namespace), case["member"]))
        assert [o.name for o in report.objects if o.action == "configured"] == [case["member"]]
        assert_helm_semantics(report.hooks, log, case.get("upgrade", case["install"]))
        print(f"{chart} upgrade: {len(report.hooks)} hooks, {report.requests}")
    finally:
        # Uninstall, so that the cluster-scoped objects (ClusterRoles, webhooks) do not outlive the test.
        run(cluster, namespace, rendered(chart, namespace), state="absent")
