"""Helm's release records read and decoded (parent/helm_release.py)."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from stubclient import CONFIGMAP, DEPLOYMENT, SECRET, StubClient

from applyset import spec
from applyset.errors import ApplySetError
from applyset.parent import helm_release

MANIFEST = """---
# Source: shop/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-settings
---
# Source: shop/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-web
  namespace: other
---
apiVersion: example.com/v9
kind: Unserved
metadata:
  name: nobody
"""


def release(version=1, status="deployed"):
    return {"name": "shop", "namespace": "shop", "version": version, "info": {"status": status},
            "chart": {"metadata": {"name": "shop", "version": "1.2.0", "appVersion": "2.0"}},
            "config": {"password": "never recorded"}, "manifest": MANIFEST}


def add_record(client, version, status="deployed", value=None):
    obj = client.add(SECRET, helm_release.record_name("shop", version), "shop",
                     labels={"owner": "helm", "name": "shop", "status": status, "version": str(version)})
    obj["type"] = helm_release.RELEASE_TYPE
    obj["data"] = {"release": value or helm_release.encode(release(version, status))}
    return obj


def test_a_record_decodes_as_helm_writes_it_compressed_or_not():
    assert helm_release.decode(helm_release.encode(release()))["manifest"] == MANIFEST
    plain = base64.b64encode(base64.b64encode(json.dumps(release()).encode())).decode()
    assert helm_release.decode(plain)["version"] == 1
    packed = base64.b64encode(base64.b64encode(gzip.compress(b"[1]"))).decode()
    with pytest.raises(ValueError):
        helm_release.decode(packed)


def test_the_newest_record_describes_the_release_and_every_record_is_kept_in_order():
    client = StubClient()
    for version in (2, 1, 3):
        add_record(client, version, "superseded" if version < 3 else "deployed")
    client.add(SECRET, "shop-token", "shop", labels={"owner": "helm", "name": "shop"})  # not a record (no type)
    found = helm_release.read(client, client.discovery, "shop", "shop")
    assert (found.version, found.status, found.ref) == (3, "deployed", "shop/shop")
    assert [r.name for r in found.records] == [f"sh.helm.release.v1.shop.v{n}" for n in (1, 2, 3)]
    assert found.chart == {"name": "shop", "version": "1.2.0", "appVersion": "2.0"} and not found.pending
    provenance = found.provenance()
    assert "config" not in provenance and "never recorded" not in json.dumps(provenance)
    assert provenance["objects"] == ["ConfigMap shop-settings", "Deployment other/shop-web", "Unserved nobody"]


def test_no_record_is_no_release_and_a_pending_one_is_pending():
    client = StubClient()
    assert helm_release.read(client, client.discovery, "shop", "shop") is None
    add_record(client, 1, "pending-install")
    assert helm_release.read(client, client.discovery, "shop", "shop").pending


def test_a_damaged_record_or_records_that_cannot_be_listed_are_named_with_the_fix():
    client = StubClient()
    add_record(client, 1, value=base64.b64encode(b"not base64 twice").decode())
    with pytest.raises(ApplySetError, match="sh.helm.release.v1.shop.v1 of Helm release shop/shop cannot be read"):
        helm_release.read(client, client.discovery, "shop", "shop")
    with pytest.raises(ApplySetError, match="list on secrets"):
        helm_release.read(StubClient(forbidden={spec.SECRET_KIND}), client.discovery, "shop", "shop")
    with pytest.raises(ApplySetError, match="list on configmaps"):
        helm_release.read(StubClient(forbidden={spec.CONFIGMAP_KIND}), client.discovery, "shop", "shop")


def test_the_release_objects_are_named_by_identity_in_the_release_namespace_when_they_name_none():
    client = StubClient()
    add_record(client, 1)
    found = helm_release.read(client, client.discovery, "shop", "shop")
    ids = helm_release.object_ids(found, client.discovery)
    assert ids == {spec.ObjectId("", "ConfigMap", "shop", "shop-settings"): CONFIGMAP,
                   spec.ObjectId("apps", "Deployment", "other", "shop-web"): DEPLOYMENT}  # unserved kinds left out


def test_the_owner_comes_from_helms_annotations():
    annotations = {helm_release.RELEASE_NAME: "shop", helm_release.RELEASE_NAMESPACE: "prod"}
    assert helm_release.owner_of({"annotations": annotations, "namespace": "x"}) == ("shop", "prod")
    assert helm_release.owner_of({"annotations": {helm_release.RELEASE_NAME: "shop"}, "namespace": "x"}) == ("shop", "x")
    assert helm_release.owner_of({"labels": {"app.kubernetes.io/managed-by": "Helm"}}) is None


def test_records_of_the_configmap_driver_are_read_too_base64_only_once():
    client = StubClient()
    obj = client.add(CONFIGMAP, helm_release.record_name("shop", 1), "shop",
                     labels={"owner": "helm", "name": "shop", "status": "deployed", "version": "1"})
    obj["data"] = {"release": base64.b64decode(helm_release.encode(release())).decode()}
    found = helm_release.read(client, client.discovery, "shop", "shop")
    assert found.version == 1 and [r.kind for r in found.records] == [spec.CONFIGMAP_KIND]
    assert found.records[0].name == "sh.helm.release.v1.shop.v1"
