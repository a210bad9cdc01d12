"""inputs/versioned.py and rules/versioned_keep.py (issue 49): a versioned ConfigMap or Secret gets a name per
content, the set's pod templates follow it, and the newest older versions are kept. Pure logic: the
end-to-end proof is tests/integration/test_versioned_config.py."""

from __future__ import annotations

import pytest

from applyset.errors import InputError
from applyset.inputs import versioned
from applyset.inputs.manifests import Manifest
from applyset.rules import versioned_keep as versions
from applyset.spec import CONFIGMAP_KIND, SECRET_KIND, GroupKind


def config(kind="ConfigMap", name="settings", marked=True, **data):
    annotations = {versioned.ANNOTATION: "true"} if marked else {}
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "annotations": annotations}}
    body["stringData" if kind == "Secret" else "data"] = data
    return Manifest(body, f"{name}.yaml")


def deployment():
    container = {"name": "app", "image": "app:1",
                 "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "db"}}],
                 "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}},
                         {"name": "M", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "m"}}}]}
    pod = {"containers": [container], "imagePullSecrets": [{"name": "db"}],
           "volumes": [{"name": "a", "configMap": {"name": "settings"}}, {"name": "b", "secret": {"secretName": "db"}},
                       {"name": "c", "projected": {"sources": [{"configMap": {"name": "settings"}},
                                                               {"secret": {"name": "db"}}]}},
                       {"name": "d", "configMap": {"name": "other"}}]}
    return Manifest({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                     "spec": {"template": {"spec": pod}}}, "web.yaml")


def test_each_reference_of_the_pod_template_follows_the_new_names_and_the_input_is_left_as_given():
    given = [config(mode="fast"), config("Secret", "db", password="s3cret"), deployment()]
    members, renames = versioned.version(given, "shop")
    cm_name, secret_name = members[0].name, members[1].name
    assert cm_name.startswith("settings-") and len(cm_name) == len("settings-") + versioned.DIGEST_LENGTH
    assert secret_name.startswith("db-") and "s3cret" not in secret_name
    assert renames == {("ConfigMap", "shop", "settings"): cm_name, ("Secret", "shop", "db"): secret_name}
    assert members[0].metadata["annotations"][versioned.BASE_NAME] == "settings"
    pod = members[2].mapping["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert [s.get("configMapRef", s.get("secretRef"))["name"] for s in container["envFrom"]] == [cm_name, secret_name]
    assert [v["valueFrom"].get("secretKeyRef", v["valueFrom"].get("configMapKeyRef"))["name"] for v in container["env"]] \
        == [secret_name, cm_name]
    assert pod["imagePullSecrets"] == [{"name": secret_name}]
    volumes = pod["volumes"]
    assert volumes[0]["configMap"]["name"] == cm_name and volumes[1]["secret"]["secretName"] == secret_name
    assert [s.get("configMap", s.get("secret"))["name"] for s in volumes[2]["projected"]["sources"]] == [cm_name, secret_name]
    assert volumes[3]["configMap"]["name"] == "other", "an object that is not versioned keeps its name"
    assert given[0].name == "settings" and given[2].mapping["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == "settings"


def test_the_name_is_the_content_s_stable_and_a_renamed_body_is_not_renamed_again():
    first, _ = versioned.version([config(mode="fast")], "shop")
    assert versioned.version([config(mode="fast")], "shop")[0][0].name == first[0].name
    assert versioned.version([config(mode="safe")], "shop")[0][0].name != first[0].name
    again, renames = versioned.version(first, "shop")  # a revision's body, as a rollback loads it
    assert again[0].name == first[0].name and renames == {("ConfigMap", "shop", "settings"): first[0].name}
    as_data = versioned.version([Manifest({**config("Secret", "db").mapping, "stringData": None,
                                           "data": {"p": "czNjcmV0"}}, "db.yaml")], "shop")[0][0].name
    assert as_data == versioned.version([config("Secret", "db", p="s3cret")], "shop")[0][0].name


def test_kapp_s_annotation_marks_too_and_a_set_without_marks_is_left_as_given():
    kapp = config(marked=False, mode="fast")
    kapp.mapping["metadata"]["annotations"] = {versioned.KAPP_ANNOTATION: ""}
    assert versioned.version([kapp], None)[0][0].name.startswith("settings-")
    plain = [config(marked=False, mode="fast"), deployment()]
    assert versioned.version(plain, "shop") == (plain, {})
    off = config(mode="fast")
    off.mapping["metadata"]["annotations"][versioned.ANNOTATION] = "false"
    assert versioned.version([off], None)[0][0].name == "settings"


def test_a_name_too_long_once_versioned_is_refused_before_any_request():
    with pytest.raises(InputError, match="longer than 253"):
        versioned.version([config(name="a" * 250, mode="fast")], None)


def meta(name, created, base="settings", namespace="shop", version="1"):
    return {"name": name, "namespace": namespace, "creationTimestamp": created, "resourceVersion": version,
            "annotations": {versioned.BASE_NAME: base} if base else {}}


def test_the_newest_older_versions_of_an_applied_series_are_kept():
    candidates = [(CONFIGMAP_KIND, meta("settings-1", "2026-01-01T00:00:01Z")),
                  (CONFIGMAP_KIND, meta("settings-3", "2026-01-01T00:00:03Z")),
                  (CONFIGMAP_KIND, meta("settings-2", "2026-01-01T00:00:02Z")),
                  (CONFIGMAP_KIND, meta("plain", "2026-01-01T00:00:09Z", base=None)),
                  (SECRET_KIND, meta("settings-9", "2026-01-01T00:00:09Z")),
                  (CONFIGMAP_KIND, meta("gone-1", "2026-01-01T00:00:09Z", base="gone"))]
    applied = versions.applied_series([(CONFIGMAP_KIND, {"metadata": meta("settings-4", "", namespace="shop")})])
    assert applied == {(CONFIGMAP_KIND, "shop", "settings")}
    assert versions.kept_versions(candidates, applied, 2) == {1, 2}
    assert versions.kept_versions(candidates, applied, 0) == set()
    assert versions.kept_versions(candidates, set(), 5) == set(), "versions of a name no longer applied all go"
    same_second = [(CONFIGMAP_KIND, meta("settings-b", "2026-01-01T00:00:01Z", version="90")),
                   (CONFIGMAP_KIND, meta("settings-a", "2026-01-01T00:00:01Z", version="100"))]
    assert versions.kept_versions(same_second, applied, 1) == {1}, "in the same second, the later write is newer"


def test_the_task_s_list_marks_a_kind_or_one_name_and_a_bad_entry_is_refused_before_any_request():
    from applyset.run.options import Options

    given = [config(marked=False, mode="fast"), config(name="other", marked=False, mode="x"), deployment()]
    by_name, _ = versioned.version(given, "shop", ("ConfigMap/settings",))
    assert by_name[0].name.startswith("settings-") and by_name[1].name == "other"
    assert by_name[2].mapping["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == by_name[0].name
    by_kind, _ = versioned.version(given, "shop", ("ConfigMap",))
    assert by_kind[1].name.startswith("other-")
    again, _ = versioned.version(by_name, "shop", ("ConfigMap/settings",))
    assert again[0].name == by_name[0].name, "a revision's body is found by its base name"
    bare = Manifest({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "annotations": None}}, "db.yaml")
    assert versioned.version([bare], None, ("Secret",))[0][0].name.startswith("db-")
    with pytest.raises(InputError, match="versioned has 'Deployment/web'"):
        Options(versioned=("Deployment/web",)).validate()


def test_a_body_is_rewritten_as_a_copy_and_one_without_references_is_not():
    renames = {("ConfigMap", "shop", "settings"): "settings-0123456789"}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "smoke", "namespace": "shop"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}}}
    rewritten = versioned.rewritten_body(job, GroupKind("batch", "Job"), renames, "shop")
    assert rewritten is not None and rewritten is not job
    assert rewritten["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"] == "settings-0123456789"
    assert job["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"] == "settings"
    assert versioned.rewritten_body(job, GroupKind("batch", "Job"), {}, "shop") is None
    assert versioned.rewritten_body({"kind": "ConfigMap"}, GroupKind("", "ConfigMap"), renames, "shop") is None
