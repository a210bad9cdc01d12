"""wait_for_sets (issue 49, steps/set_dependencies.py) on the real control plane: a set that waits for
another set's revision and for its members' readiness (an ExternalSecret whose status a thread writes
as External Secrets' controller would, with the published CRD of tests/integration/data/crds/delivery/),
that fails at once when the other set's last release failed or one of its members failed, and that
in check mode only says whether it would wait.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.errors import WaitTimeout  # noqa: E402
from applyset.history.revisions import Settings  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options, SetDependency  # noqa: E402

CRD = Path(__file__).parent / "data" / "crds" / "delivery" / "external-secrets.io_externalsecrets.yaml"
FAST = 20  # seconds: "at once" on a loaded two-core machine, against a 120 s wait_timeout


@pytest.fixture(scope="module")
def crd(kube):
    return kube.establish_crds([yaml.safe_load(CRD.read_text())], "test-set-dependencies")


def cm(name, value):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}


def external_secret(name):
    return {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": {"name": name},
            "spec": {"secretStoreRef": {"name": "vault", "kind": "SecretStore"}, "target": {"name": name},
                     "data": [{"secretKey": "password", "remoteRef": {"key": name}}]}}


def run(cluster, namespace, parent, docs, **options):
    options.setdefault("history", Settings())
    built = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), parent, namespace,
                          Options.from_settings(**options))
    return built.apply(manifests.load_definition(docs))


def in_thread(call):
    """Run ``call`` in a thread; the returned dict gets its ``result`` or ``error``."""
    outcome: dict = {}

    def target():
        try:
            outcome["result"] = call()
        except Exception as err:  # handed to the test, which asserts on it
            outcome["error"] = err
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    outcome["thread"] = thread
    return outcome


def write_status(kube, namespace, name, ready, reason, message):
    path = f"/apis/external-secrets.io/v1/namespaces/{namespace}/externalsecrets/{name}/status"
    status = {"conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message,
                              "lastTransitionTime": "2026-01-01T00:00:00Z"}], "syncedResourceVersion": "1-abc"}
    code, body, _ = kube.request("PATCH", path, {"status": status}, content_type="application/merge-patch+json")
    assert code == 200, body


def resource_version(kube, path):
    return int(kube.get(path)["metadata"]["resourceVersion"])


def test_a_set_waits_for_another_sets_revision_and_its_members_readiness(cluster, kube, namespace, crd):
    run(cluster, namespace, "db", [cm("db-settings", "1"), external_secret("db-password")])
    waiting_run = in_thread(lambda: run(cluster, namespace, "web", [cm("web-settings", "1")], wait_timeout=120,
                                        wait_for_sets=(SetDependency("db", revision=2, ready=True),)))
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/web-settings") is None
    run(cluster, namespace, "db", [cm("db-settings", "2"), external_secret("db-password")])  # revision 2
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/web-settings") is None  # the member is not ready
    write_status(kube, namespace, "db-password", "True", "SecretSynced", "Secret was synced")
    waiting_run["thread"].join(timeout=60)
    assert "result" in waiting_run, waiting_run.get("error")
    # The web set was written after the db set's revision 2 and its member's readiness (the API
    # server's resourceVersions order the writes; no clock involved).
    written = resource_version(kube, f"/api/v1/namespaces/{namespace}/configmaps/web-settings")
    assert written > resource_version(kube, f"/api/v1/namespaces/{namespace}/secrets/db")
    assert written > resource_version(kube, f"/apis/external-secrets.io/v1/namespaces/{namespace}/externalsecrets/db-password")


def test_a_failed_dependency_fails_at_once_and_check_mode_says_it_would_wait(cluster, kube, namespace, crd):
    preview = run(cluster, namespace, "web", [cm("web-settings", "1")], dry_run=True,
                  wait_for_sets=(SetDependency("db"),))
    assert any("a real run would wait for ApplySet Secret" in w and "not deployed yet" in w for w in preview.warnings), \
        preview.warnings
    # The db set's release fails: its ExternalSecret's controller says Ready False.
    writer = in_thread(lambda: _status_once_created(kube, namespace))
    with pytest.raises(WaitTimeout):
        run(cluster, namespace, "db", [external_secret("db-password")], wait=True, wait_timeout=120)
    writer["thread"].join(timeout=10)
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        run(cluster, namespace, "web", [cm("web-settings", "1")], wait_timeout=120,
            wait_for_sets=(SetDependency("db"),))
    assert time.monotonic() - started < FAST
    assert "ApplySet Secret" in str(caught.value) and "its last release, revision 1, failed" in str(caught.value), \
        str(caught.value)
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/web-settings") is None


def _status_once_created(kube, namespace):
    path = f"/apis/external-secrets.io/v1/namespaces/{namespace}/externalsecrets/db-password"
    deadline = time.monotonic() + 60
    while kube.get(path) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    write_status(kube, namespace, "db-password", "False", "SecretSyncedError", "could not get secret data from provider")


# The ConfigMap's part reads a built-in kind, whose LIST items carry no kind of their own.
READY_EXPR = ("members.exists(m, m.kind == 'ConfigMap' && m.apiVersion == 'v1' && m.data.v == '7') && "
              "members.exists(m, m.kind == 'ExternalSecret' && "
              "m.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True'))")


def test_a_set_waits_until_a_ready_expr_over_the_other_sets_members_holds(cluster, kube, namespace, crd):
    run(cluster, namespace, "db", [external_secret("db-password"), cm("db-settings", "7")])
    preview = run(cluster, namespace, "web", [cm("web-settings", "1")], dry_run=True,
                  wait_for_sets=(SetDependency("db", ready_expr=READY_EXPR),))
    assert any("a real run would wait for ready_expr on ApplySet Secret" in w for w in preview.warnings), preview.warnings
    waiting_run = in_thread(lambda: run(cluster, namespace, "web", [cm("web-settings", "1")], wait_timeout=120,
                                        wait_for_sets=(SetDependency("db", ready_expr=READY_EXPR),)))
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/web-settings") is None
    write_status(kube, namespace, "db-password", "True", "SecretSynced", "Secret was synced")
    waiting_run["thread"].join(timeout=60)
    assert "result" in waiting_run, waiting_run.get("error")
    written = resource_version(kube, f"/api/v1/namespaces/{namespace}/configmaps/web-settings")
    assert written > resource_version(kube, f"/apis/external-secrets.io/v1/namespaces/{namespace}/externalsecrets/db-password")
