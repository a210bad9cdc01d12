"""The words of results and errors (issue 36, item 10) against the real control plane: a set is
named with its kind and namespace, a message names its subject once, hook objects are named with
their namespace, ``changed_by`` never shows a time of None, and a diff shows what the user changed
without the collection's own bookkeeping.

The core library is driven directly (engine.Engine); the independent test client ``kube`` makes
changes by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.history import revisions as history  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.errors import ApplySetError, InputError  # noqa: E402

DIGEST = "applyset.kubernetes.ansible/applied-digest"
PART_OF = "applyset.kubernetes.io/part-of"


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"v": "1"}}


def apply(cluster, namespace, objects, parent="words", **options):
    run = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), parent, namespace,
                        Options.from_settings(**options))
    return run.apply(manifests.load_definition(objects))


def test_a_set_is_named_with_its_kind_and_namespace_and_a_message_names_its_subject_once(cluster, namespace):
    apply(cluster, namespace, [cm("a")], history=history.Settings())
    with pytest.raises(ApplySetError) as caught:
        apply(cluster, namespace, [], history=history.Settings(rollback_to=99))
    text = str(caught.value)
    assert text.startswith(f"revision 99 of ApplySet Secret {namespace}/words is not kept (no Secret "), text
    assert text.count("revision 99") == 1 and "secrets./words" not in text, text
    assert caught.value.obj == f"revision 99 of ApplySet Secret {namespace}/words"


def test_hook_objects_are_named_with_their_namespace_in_input_errors(cluster, namespace):
    hook = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "annotations": {"helm.sh/hook": "pre-instal"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}}}}
    with pytest.raises(InputError) as caught:
        apply(cluster, namespace, [cm("a"), hook])
    assert f"definition item 2 (Job {namespace}/migrate): annotation helm.sh/hook: unknown value" in str(caught.value)


def deployment(replicas):
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.9"}]}}}}


def test_changed_by_of_a_scale_subresource_entry_has_no_time_of_none(cluster, kube, namespace):
    apply(cluster, namespace, [deployment(0)])
    status, body, _ = kube.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/web/scale",
                                   {"spec": {"replicas": 2}}, query={"fieldManager": "scaler"},
                                   content_type="application/merge-patch+json")
    assert status == 200, body
    report = apply(cluster, namespace, [deployment(0)], force_conflicts=True)
    (web,) = report.objects
    (scaler,) = [c for c in web.changed_by if c["manager"] == "scaler"]
    assert scaler["subresource"] == "scale" and scaler["fields"] == [".spec.replicas"], web.changed_by
    assert scaler.get("time", "absent") is not None, web.changed_by
    assert "None" not in (web.reason or ""), web.reason


def test_a_diff_shows_the_users_change_without_the_collections_bookkeeping(cluster, namespace):
    created = apply(cluster, namespace, [cm("a", v="1")], diff=True)
    assert PART_OF in created.diff[0]["after"], created.diff  # the label says what joins the set
    changed = apply(cluster, namespace, [cm("a", v="2")], diff=True)
    (entry,) = changed.diff
    assert DIGEST not in entry["before"] and DIGEST not in entry["after"], entry
    assert "annotations" not in entry["before"] and "annotations" not in entry["after"], entry
    assert "v: '1'" in entry["before"] and "v: '2'" in entry["after"], entry
