"""inputs/config_digest.py: which references a pod template has, the digest of the stored form, and
which workloads get the annotation (and that the caller's documents are left as given)."""

from __future__ import annotations

import base64
import copy

from applyset.inputs import config_digest
from applyset.inputs.manifests import Manifest

ANNOTATION = config_digest.ANNOTATION


def doc(api_version, kind, name, namespace=None, **body):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return Manifest({"apiVersion": api_version, "kind": kind, "metadata": meta, **body}, f"{kind} {name}")


def deployment(name="web", namespace=None, pod_spec=None):
    return doc("apps/v1", "Deployment", name, namespace, spec={
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec or {}}})


READS_ALL = {
    "volumes": [{"name": "a", "configMap": {"name": "settings"}}, {"name": "b", "secret": {"secretName": "token"}},
                {"name": "c", "projected": {"sources": [{"configMap": {"name": "extra"}},
                                                       {"secret": {"name": "certs"}}]}}],
    "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init"}}]}],
    "containers": [{"name": "w", "envFrom": [{"configMapRef": {"name": "env"}}], "env": [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "keyed", "key": "x"}}},
        {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "password", "key": "y"}}},
        {"name": "Z", "value": "plain"}]}],
    "imagePullSecrets": [{"name": "registry"}],
}


def test_every_way_a_pod_reads_config_is_a_reference():
    assert config_digest.references(READS_ALL) == {
        ("ConfigMap", "settings"), ("Secret", "token"), ("ConfigMap", "extra"), ("Secret", "certs"),
        ("Secret", "init"), ("ConfigMap", "env"), ("ConfigMap", "keyed"), ("Secret", "password")}


def template_annotation(manifest):
    return (manifest.mapping["spec"]["template"]["metadata"].get("annotations") or {}).get(ANNOTATION)


def test_a_workload_reading_config_of_the_set_gets_its_digest_and_the_input_is_left_as_given():
    members = [doc("v1", "ConfigMap", "settings", data={"mode": "fast"}), deployment(pod_spec=READS_ALL),
               deployment("other", pod_spec={"containers": [{"name": "o"}]})]
    given = copy.deepcopy([m.mapping for m in members])
    annotated, names = config_digest.annotate(members, "shop")
    assert names == ["Deployment web"]
    assert template_annotation(annotated[1]).startswith("sha256:") and len(template_annotation(annotated[1])) == 71
    assert template_annotation(annotated[2]) is None and annotated[2] is members[2]
    assert [m.mapping for m in members] == given  # copies were annotated


def digest_of(config, workload_namespace=None):
    annotated, _names = config_digest.annotate([config, deployment(namespace=workload_namespace, pod_spec=READS_ALL)],
                                               "shop")
    return template_annotation(annotated[1])


def test_the_digest_follows_the_content_and_not_how_a_secret_is_written():
    one = digest_of(doc("v1", "ConfigMap", "settings", data={"mode": "fast"}))
    assert one == digest_of(doc("v1", "ConfigMap", "settings", data={"mode": "fast"}))
    assert one != digest_of(doc("v1", "ConfigMap", "settings", data={"mode": "safe"}))
    as_text = digest_of(doc("v1", "Secret", "token", stringData={"t": "s3cret"}))
    as_data = digest_of(doc("v1", "Secret", "token", data={"t": base64.b64encode(b"s3cret").decode()}))
    assert as_text == as_data and "s3cret" not in as_text


def test_config_in_another_namespace_or_a_job_is_not_followed():
    assert digest_of(doc("v1", "ConfigMap", "settings", "other", data={"a": "1"})) is None
    assert digest_of(doc("v1", "ConfigMap", "settings", "shop", data={"a": "1"})) is not None  # the default namespace
    job = doc("batch/v1", "Job", "migrate", spec={"template": {"spec": READS_ALL}})
    members = [doc("v1", "ConfigMap", "settings", data={}), job]
    assert config_digest.annotate(members, "shop") == (members, [])


def test_a_cronjob_and_a_rollout_are_annotated_where_their_pod_template_is():
    cron = doc("batch/v1", "CronJob", "nightly", spec={"schedule": "@daily", "jobTemplate": {
        "spec": {"template": {"spec": READS_ALL}}}})
    rollout = doc("argoproj.io/v1alpha1", "Rollout", "web", spec={"template": {"spec": READS_ALL}})
    annotated, names = config_digest.annotate([doc("v1", "Secret", "token", data={}), cron, rollout], None)
    assert names == ["CronJob nightly", "Rollout web"]
    assert ANNOTATION in annotated[1].mapping["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
    assert ANNOTATION in annotated[2].mapping["spec"]["template"]["metadata"]["annotations"]
