"""Charts that read the cluster when they render (issue 47, deliver 1): ``lookup`` reads it under the
task's own connection, as ``helm upgrade`` renders, with helm 3 and helm 4 (helm_bins.py).

The chart: Bitnami's tomcat with its ``common`` library chart vendored under ``charts/`` (data/charts/src,
origin and commit in its README). ``common.secrets.passwords.manage`` generates the password on the first
run and, on an upgrade, reads it back from the Secret with ``lookup``; rendered without the cluster, its
second run fails ("PASSWORDS ERROR: You must provide your current passwords when upgrading the release").
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from helm_bins import HELMS, helm, helm_binaries
from test_history import run, task

TOMCAT = Path(__file__).resolve().parent / "data" / "charts" / "src" / "tomcat"
# No volume (no provisioner here), no load balancer; the password left to the chart to generate.
VALUES = {"persistence": {"enabled": False}, "service": {"type": "ClusterIP"}}


@pytest.fixture(scope="module", params=HELMS)
def helm_name(request):
    helm_binaries()
    return request.param


def tomcat_task(name, register, namespace, helm_name, check_mode=False, **helm_args):
    return task(name, register, check_mode=check_mode, parent="web", namespace=namespace,
                helm={"chart": str(TOMCAT), "release_name": "web", "values": VALUES,
                      "binary": helm_binaries()[helm_name], **helm_args})


def password(kube, namespace) -> str:
    secret = kube.get(f"/api/v1/namespaces/{namespace}/secrets/web-tomcat")
    return base64.b64decode(secret["data"]["tomcat-password"]).decode()


def test_a_generated_password_is_kept_on_every_later_run(cluster, kube, namespace, tmp_path, helm_name):
    results, output = run(cluster, tmp_path, namespace, [
        tomcat_task("install", "install", namespace, helm_name),
        tomcat_task("preview the same", "preview", namespace, helm_name, check_mode=True),
        tomcat_task("again", "again", namespace, helm_name),
        tomcat_task("without lookup", "blind", namespace, helm_name, lookup=False)])
    install, preview, again, blind = (results[name] for name in ("install", "preview", "again", "blind"))
    assert not install.get("failed"), output
    generated = password(kube, namespace)
    assert len(generated) == 10

    # The second run renders as helm upgrade does: lookup reads the Secret, the password stays, nothing is written.
    assert not preview.get("failed") and not preview["changed"], preview
    assert not again.get("failed"), again
    assert not again["changed"] and again["requests"]["writes"] == 0, again
    assert password(kube, namespace) == generated

    # lookup: false renders without the cluster, as before: the chart refuses its own upgrade, and nothing is written.
    assert blind.get("failed") and "PASSWORDS ERROR" in blind["msg"], blind
    assert blind["requests"]["writes"] == 0 if "requests" in blind else True
    assert password(kube, namespace) == generated


def test_a_helm_installed_release_is_taken_over_as_an_upgrade(cluster, kube, namespace, tmp_path, helm_name):
    """helm install made the password; the take-over renders as helm upgrade (lookup reads it back), so
    the Secret and the Deployment keep their content and UIDs: no new password, no restart."""
    values = tmp_path / "values.yaml"
    values.write_text("persistence:\n  enabled: false\nservice:\n  type: ClusterIP\n")
    helm(helm_name, "install", "web", str(TOMCAT), "-n", namespace, "--values", str(values),
         "--kubeconfig", cluster.kubeconfig)
    generated = password(kube, namespace)
    deployment = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web-tomcat")
    results, output = run(cluster, tmp_path, namespace, [
        tomcat_task("preview the take-over", "preview", namespace, helm_name, check_mode=True, take_over=True),
        tomcat_task("take over", "take", namespace, helm_name, take_over=True)])
    assert not results["preview"].get("failed") and not results["take"].get("failed"), output
    assert results["take"]["applyset"]["helm_take_over"]["retired"] is True
    assert password(kube, namespace) == generated
    after = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web-tomcat")
    assert after["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert after["spec"]["template"] == deployment["spec"]["template"]
