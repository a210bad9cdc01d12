"""Taking over a release that Helm 3 or Helm 4 installed (issue 40, Deliver 3), against the real
control plane: UIDs kept, no rollout, Helm's field ownership ours, the release retired (``helm list``
empty, ``helm uninstall`` finds nothing), what the chart no longer renders pruned, a re-run writes
nothing, check mode previews it all and writes nothing, and every refusal comes before any write.

The helm binaries: the ones the chart tests use (``helm_bins``: ``APPLYSET_TEST_HELM3`` /
``APPLYSET_TEST_HELM4``, else the helm 3 and helm 4 that ``make helm`` builds); never skipped.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env
from helm_bins import HELMS, helm_binaries
from module_runner import run_module_forked
from test_apply import PART_OF, apply, snapshot

CHARTS = Path(__file__).parent / "data" / "charts"
CHART = CHARTS / "takeover"
RELEASE = "demo"


class Helm:
    """One helm binary run against the test cluster."""

    def __init__(self, binary: str, cluster, name: str, driver: str = "secret"):
        self.binary, self.cluster, self.name, self.driver = binary, cluster, name, driver

    def run(self, *args, check=True):
        proc = subprocess.run([self.binary, *args, "--kubeconfig", self.cluster.kubeconfig], capture_output=True,
                              text=True, timeout=180, env=ansible_env(self.cluster, HELM_DRIVER=self.driver))
        assert not check or proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def install(self, namespace, release=RELEASE):
        self.run("install", release, str(CHART), "-n", namespace)

    def template(self, namespace, release=RELEASE, **values):
        sets = [f"--set={key}={str(value).lower()}" for key, value in values.items()]
        out = self.run("template", release, str(CHART), "-n", namespace, *sets).stdout
        return [doc for doc in yaml.safe_load_all(out) if doc]

    def releases(self, namespace):
        # Helm 4 lists releases of every status by default and has no --all any more.
        every = ["--all"] if self.name == "helm3" else []
        return self.run("list", "-n", namespace, "-q", *every).stdout.split()


@pytest.fixture(params=HELMS)
def helm(request, cluster):
    return Helm(helm_binaries()[request.param], cluster, request.param)


def take_over(cluster, namespace, definition, check=False, diff=False, **helm):
    args = {"parent": "set1", "namespace": namespace, "definition": definition,
            "helm": {"release_name": RELEASE, "take_over": True, **helm}}
    if diff:  # registered, so that the result keeps its diff (the callback shows it and takes it out)
        return run_module_forked(cluster, "applyset_apply", args, check=check, diff=True, registered=True)
    return apply(cluster, namespace, definition, check=check, helm=args["helm"])


def live(kube, namespace):
    paths = {"ConfigMap": f"/api/v1/namespaces/{namespace}/configmaps/{RELEASE}-settings",
             "Service": f"/api/v1/namespaces/{namespace}/services/{RELEASE}-web",
             "Deployment": f"/apis/apps/v1/namespaces/{namespace}/deployments/{RELEASE}-web",
             "Secret": f"/api/v1/namespaces/{namespace}/secrets/{RELEASE}-token"}
    return {kind: kube.get(path) for kind, path in paths.items()}


def workload(kube, namespace):
    """The Deployment's ReplicaSets (name, uid, pod-template-hash) and pods (uid): a rollout changes them."""
    sets = kube.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    pods = kube.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return (sorted((s["metadata"]["name"], s["metadata"]["uid"], s["metadata"]["labels"].get("pod-template-hash"))
                   for s in sets),
            sorted(p["metadata"]["uid"] for p in pods))


def settled_workload(kube, namespace, timeout=60.0):
    """``workload`` once the controllers made the ReplicaSet and its pods (a loaded machine may take
    seconds), so that the take-over is compared with a rollout that already happened."""
    deadline = time.monotonic() + timeout
    while True:
        sets, pods = workload(kube, namespace)
        if (sets and pods) or time.monotonic() > deadline:
            return sets, pods
        time.sleep(0.2)


def first_revision(kube, namespace):
    """The set's first revision as its Secret stores it (history.revisions: gzip-compressed JSON)."""
    secrets = kube.get(f"/api/v1/namespaces/{namespace}/secrets")["items"]
    first = next(s for s in secrets if s["metadata"]["name"].startswith("applyset.set1.")
                 and s["metadata"]["name"].endswith(".v1"))
    return json.loads(gzip.decompress(base64.b64decode(first["data"]["revision"])))


def managers(obj):
    return {entry["manager"] for entry in obj["metadata"].get("managedFields") or []
            if not entry.get("subresource")}


def test_a_release_is_previewed_then_taken_over_with_uids_kept_ownership_ours_and_the_release_retired(
        cluster, kube, namespace, helm):
    helm.install(namespace)
    before = live(kube, namespace)
    assert "helm" in managers(before["ConfigMap"])
    workload_before = settled_workload(kube, namespace)
    # The user's manifests: the chart rendered without the label only Helm set and without the Secret.
    desired = helm.template(namespace, extraLabel=False, withSecret=False)
    state = snapshot(kube, [namespace])

    rc, result, out = take_over(cluster, namespace, desired, check=True, diff=True)
    assert rc == 0, out
    preview = result["applyset"]["helm_take_over"]
    # What the real run removes, in the result and in the diff (issue 47 item 4): Helm's annotations
    # and the label only Helm set, which the manifests drop.
    helm_annotations = [".metadata.annotations.meta.helm.sh/release-name",
                        ".metadata.annotations.meta.helm.sh/release-namespace"]
    assert preview["removes"][f"ConfigMap {namespace}/{RELEASE}-settings"] == [
        *helm_annotations, ".metadata.labels.only-helm-set"], preview
    assert preview["removes"][f"Deployment {namespace}/{RELEASE}-web"] == helm_annotations, preview
    settings = next(d for d in result["diff"] if d["before_header"] == f"ConfigMap {namespace}/{RELEASE}-settings")
    assert "meta.helm.sh/release-name" in settings["before"] and "only-helm-set" in settings["before"]
    assert "meta.helm.sh/release-name" not in settings["after"] and "only-helm-set" not in settings["after"]
    assert PART_OF in settings["after"]
    assert preview["found"] and preview["release"] == RELEASE and preview["status"] == "deployed"
    assert preview["adopted"] == sorted([f"ConfigMap {namespace}/{RELEASE}-settings",
                                         f"Deployment {namespace}/{RELEASE}-web", f"Service {namespace}/{RELEASE}-web"])
    assert preview["dropped"] == [f"Secret {namespace}/{RELEASE}-token"]
    assert preview["field_managers"] == ["helm"] and preview["records"] == [f"sh.helm.release.v1.{RELEASE}.v1"]
    assert not preview["retired"]
    token = next(o for o in result["objects"] if o["name"] == f"{RELEASE}-token")
    assert token["action"] == "pruned"
    assert token["reason"] == f"taken over from Helm release {namespace}/{RELEASE} and no longer in the manifests"
    # One warning for the release, naming the objects (not one per object).
    head = f"a real run first takes over all fields of helm (Helm release {namespace}/{RELEASE}) on 3 objects: "
    assert out.count("a real run first takes over all fields of helm") == 1 and head in out, out
    assert snapshot(kube, [namespace]) == state  # check mode wrote nothing
    assert helm.releases(namespace) == [RELEASE]

    rc, result, out = take_over(cluster, namespace, desired)
    assert rc == 0, out
    assert result["applyset"]["helm_take_over"]["retired"]
    # The real run's warning is one for the release too (issue 47 item 4).
    assert out.count("took over all fields of helm") == 1, out
    assert (f"took over all fields of helm (Helm release {namespace}/{RELEASE}) on 3 objects: "
            f"ConfigMap {namespace}/{RELEASE}-settings, Service {namespace}/{RELEASE}-web, "
            f"Deployment {namespace}/{RELEASE}-web") in out, out
    provenance = first_revision(kube, namespace)["provenance"]["helm_release"]
    assert provenance["chart"] == {"name": "takeover", "version": "0.1.0", "appVersion": "1.0"}
    assert provenance["revision"] == 1 and f"Secret {RELEASE}-token" in provenance["objects"]
    assert "config" not in provenance and "values" not in provenance
    after = live(kube, namespace)
    for kind in ("ConfigMap", "Service", "Deployment"):
        meta = after[kind]["metadata"]
        assert meta["uid"] == before[kind]["metadata"]["uid"], kind  # nothing recreated
        assert meta["labels"][PART_OF] == result["applyset"]["id"], kind
        assert "helm" not in managers(after[kind]), (kind, after[kind]["metadata"]["managedFields"])
        assert not any(key.startswith("meta.helm.sh/") for key in meta.get("annotations") or {}), kind
    # No rollout: the Deployment's spec did not change, so its ReplicaSet (pod template hash) and pods
    # are the same. (Its generation does move: a Deployment's annotations count, and Helm's went.)
    assert after["Deployment"]["spec"] == before["Deployment"]["spec"]
    assert workload(kube, namespace) == workload_before
    # A field only Helm set, which our manifests drop, is gone; the dropped object is pruned.
    assert "only-helm-set" not in after["ConfigMap"]["metadata"]["labels"]
    assert after["Secret"] is None
    assert helm.releases(namespace) == []
    gone = helm.run("uninstall", RELEASE, "-n", namespace, check=False)
    assert gone.returncode != 0 and "not found" in gone.stderr, gone.stderr
    # Helm's annotations went with its ownership, so a later helm install of the same name refuses to
    # import what the set owns instead of taking it back (Helm's existingResourceConflict).
    again = helm.run("install", RELEASE, str(CHART), "-n", namespace, check=False)
    assert again.returncode != 0 and "invalid ownership metadata" in again.stderr, again.stderr
    assert helm.releases(namespace) == []

    rc, result, out = take_over(cluster, namespace, desired)
    assert rc == 0 and not result["changed"], out
    assert result["requests"]["writes"] == 0, result["requests"]
    assert result["applyset"]["helm_take_over"] == {"release": RELEASE, "namespace": namespace, "found": False}


def test_a_conflict_the_dry_runs_find_refuses_the_whole_take_over_before_any_write_unless_forced(
        cluster, kube, namespace, helm):
    """Issue 47 item 4: another manager changed a field of the Deployment (applied after the
    ConfigMap and the Service): the take-over is refused before any write, naming the object, field
    and manager, where it used to take over the first objects and then stop with the release half
    Helm's. With force_conflicts it goes through, every UID kept."""
    helm.install(namespace)
    web = f"/apis/apps/v1/namespaces/{namespace}/deployments/{RELEASE}-web"
    status, payload, _ = kube.request("PATCH", web, {"metadata": {"labels": {"app.kubernetes.io/instance": "edited"}}},
                                      query={"fieldManager": "kubectl-label"},
                                      content_type="application/merge-patch+json")
    assert status == 200, payload
    before = live(kube, namespace)
    desired = helm.template(namespace)
    state = snapshot(kube, [namespace])

    rc, result, out = take_over(cluster, namespace, desired)
    assert rc != 0, out
    assert (f"taking over Helm release {namespace}/{RELEASE} would stop half way: 1 of its objects would be refused"
            in result["msg"]), result["msg"]
    assert (f'Deployment {namespace}/{RELEASE}-web: .metadata.labels.app.kubernetes.io/instance (manager '
            '"kubectl-label")') in result["msg"], result["msg"]
    assert "force_conflicts: true" in result["msg"]
    assert snapshot(kube, [namespace]) == state  # nothing written: no object taken over, no claim
    assert "helm" in managers(live(kube, namespace)["ConfigMap"])
    assert helm.releases(namespace) == [RELEASE]

    rc, result, out = apply(cluster, namespace, desired, helm={"release_name": RELEASE, "take_over": True},
                            force_conflicts=True)
    assert rc == 0, result.get("msg")
    assert result["applyset"]["helm_take_over"]["retired"]
    after = live(kube, namespace)
    assert {k: o["metadata"]["uid"] for k, o in after.items()} == {k: o["metadata"]["uid"] for k, o in before.items()}
    assert after["Deployment"]["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
    assert helm.releases(namespace) == []


def test_helm_objects_are_refused_without_take_over_or_for_another_release_and_nothing_is_written(
        cluster, kube, namespace, helm):
    helm.install(namespace)
    desired = helm.template(namespace)
    state = snapshot(kube, [namespace])

    rc, result, out = apply(cluster, namespace, desired)
    assert rc != 0
    assert f"Secret {namespace}/{RELEASE}-token and 3 more objects belong to Helm release " \
        f"{namespace}/{RELEASE};" in result["msg"], result["msg"]
    assert "helm.take_over: true" in result["msg"]
    assert result["requests"]["writes"] == 0

    rc, result, out = take_over(cluster, namespace, desired, release_name="other")
    assert rc != 0
    assert f"Helm release {namespace}/{RELEASE} (this run takes over release {namespace}/other)" in result["msg"]
    assert f"helm.release_name: {RELEASE}" in result["msg"]
    assert result["requests"]["writes"] == 0
    assert snapshot(kube, [namespace]) == state
    assert helm.releases(namespace) == [RELEASE]


def test_a_release_helm_is_in_the_middle_of_is_refused_before_any_write(cluster, kube, namespace, helm):
    helm.install(namespace)
    desired = helm.template(namespace)
    # What an interrupted helm upgrade leaves: a newer record, pending-upgrade.
    record = kube.get(f"/api/v1/namespaces/{namespace}/secrets/sh.helm.release.v1.{RELEASE}.v1")
    pending = {"apiVersion": "v1", "kind": "Secret", "type": record["type"], "data": dict(record["data"]),
               "metadata": {"name": f"sh.helm.release.v1.{RELEASE}.v2",
                            "labels": {**record["metadata"]["labels"], "status": "pending-upgrade", "version": "2"}}}
    pending["data"]["release"] = _with_status(record["data"]["release"], "pending-upgrade", 2)
    kube.create(f"/api/v1/namespaces/{namespace}/secrets", pending)
    state = snapshot(kube, [namespace])

    rc, result, out = take_over(cluster, namespace, desired)
    assert rc != 0
    assert f"Helm release {namespace}/{RELEASE} is pending-upgrade (revision 2)" in result["msg"], result["msg"]
    assert result["requests"]["writes"] == 0
    assert snapshot(kube, [namespace]) == state


def test_a_release_kept_in_configmaps_is_taken_over_and_its_records_retired(cluster, kube, namespace, helm):
    helm.driver = "configmap"  # HELM_DRIVER=configmap: the records are ConfigMaps
    helm.install(namespace)
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/sh.helm.release.v1.{RELEASE}.v1") is not None
    uid = live(kube, namespace)["ConfigMap"]["metadata"]["uid"]

    rc, result, out = take_over(cluster, namespace, helm.template(namespace))
    assert rc == 0, out
    assert result["applyset"]["helm_take_over"]["retired"]
    assert live(kube, namespace)["ConfigMap"]["metadata"]["uid"] == uid
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/sh.helm.release.v1.{RELEASE}.v1") is None
    assert helm.releases(namespace) == []


def test_a_public_chart_installed_by_helm_is_taken_over_with_every_uid_kept(cluster, kube, namespace, helm, tmp_path):
    """ingress-nginx as rendered in data/charts/ingress-nginx (its README names the origin), installed
    by helm from a chart that holds exactly that text, hooks included, then taken over."""
    text = (CHARTS / "ingress-nginx" / "rendered.yaml").read_text().replace("helm-hooks-ns", namespace)
    chart = tmp_path / "ingress-nginx"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: ingress-nginx\nversion: 4.15.1\n")
    (chart / "rendered.yaml").write_text(text)
    (chart / "templates" / "all.yaml").write_text('{{ .Files.Get "rendered.yaml" }}')
    helm.run("install", "ingress-nginx", str(chart), "-n", namespace)
    objects = [doc for doc in yaml.safe_load_all(text) if doc]
    members = [o for o in objects if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})]
    uids = {ref(o): uid_of(kube, o, namespace) for o in members}
    assert None not in uids.values(), uids
    try:
        rc, result, out = apply(cluster, namespace, objects, helm={"release_name": "ingress-nginx", "take_over": True})
        assert rc == 0, out
        taken = result["applyset"]["helm_take_over"]
        assert taken["retired"] and len(taken["adopted"]) == len(members) and taken["dropped"] == []
        assert {ref(o): uid_of(kube, o, namespace) for o in members} == uids
        for obj in members:
            live_obj = kube.get(path_of(kube, obj, namespace))
            assert "helm" not in managers(live_obj), ref(obj)
        assert helm.releases(namespace) == []
        rc, result, out = apply(cluster, namespace, objects, helm={"release_name": "ingress-nginx", "take_over": True})
        assert rc == 0 and not result["changed"] and result["requests"]["writes"] == 0, out
    finally:  # its cluster-scoped objects (IngressClass, webhook, ClusterRole) must not outlive the test
        apply(cluster, namespace, objects, state="absent")


def ref(obj):
    return f"{obj['kind']} {obj['metadata']['name']}"


def path_of(kube, obj, namespace):
    """The API path of ``obj`` (its plural and scope from discovery)."""
    group_version = obj["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    for discovered in kube.get(base)["resources"]:
        if discovered.get("kind") == obj["kind"] and "/" not in discovered["name"]:
            where = f"/namespaces/{namespace}" if discovered["namespaced"] else ""
            return f"{base}{where}/{discovered['name']}/{obj['metadata']['name']}"
    raise AssertionError(f"{obj['kind']} is not served")


def uid_of(kube, obj, namespace):
    found = kube.get(path_of(kube, obj, namespace))
    return found["metadata"]["uid"] if found else None


def _with_status(value: str, status: str, version: int) -> str:
    """A record's ``release`` value with another status and version: base64 (the API's) of
    base64(gzip(JSON)) (Helm's)."""
    release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(value))))
    release["info"]["status"], release["version"] = status, version
    return base64.b64encode(base64.b64encode(gzip.compress(json.dumps(release).encode()))).decode()
