"""server_form.py and the zero values of nochange.contains (issue 36, item 5): a member's body in
the form the API server stores it, so that a value the server normalises is no drift."""

from __future__ import annotations

import base64

import pytest

from plugins.module_utils.applyset.rules import nochange, server_form


@pytest.mark.parametrize("given, stored", [
    ("1000m", "1"), (0.5, "500m"), ("0.5", "500m"), (2, "2"), (2.0, "2"), ("1500m", "1500m"), ("1000", "1k"),
    ("100", "100"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("1.5Gi", "1536Mi"), ("0.5Ki", "512"),
    ("512Ki", "512Ki"), ("0Gi", "0"), ("1e3", "1e3"), ("12e6", "12e6"), ("0.1n", "1n"), ("129M", "129M"),
    ("1.0000000001", "1000000001n"), ("-1", "-1"),
])
def test_a_quantity_takes_the_canonical_form_of_resource_quantity(given, stored):
    assert server_form.canonical_quantity(given) == stored


@pytest.mark.parametrize("given", ["abc", "1Xi", "", True, None, [1]])
def test_what_is_no_quantity_is_left_as_it_is(given):
    assert server_form.canonical_quantity(given) == given


def pod_template(resources, **extra):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "resources": resources}], **extra}}}}


def test_quantities_of_built_in_kinds_are_canonical_and_the_body_is_not_changed_in_place():
    body = pod_template({"limits": {"cpu": "1000m"}, "requests": {"cpu": 0.5}},
                        volumes=[{"name": "v", "emptyDir": {"sizeLimit": "1024Mi"}}])
    stored = server_form.as_stored(body)
    spec = stored["spec"]["template"]["spec"]
    assert spec["containers"][0]["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}
    assert spec["volumes"][0]["emptyDir"]["sizeLimit"] == "1Gi"
    assert body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1000m"


def test_a_body_already_canonical_is_returned_as_it_is():
    body = pod_template({"limits": {"cpu": "1", "memory": "1Gi"}})
    assert server_form.as_stored(body) is body


def test_a_custom_resource_stores_what_it_is_given():
    body = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "spec": {"resources": {"limits": {"cpu": "1000m"}}}}
    assert server_form.as_stored(body) is body


def test_hpa_targets_are_quantities_only_in_autoscaling():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "spec": {"metrics": [{"type": "Pods", "pods": {"target": {"type": "AverageValue", "averageValue": "1000m"}}}]}}
    assert server_form.as_stored(hpa)["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "1"
    other = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"target": "x"}, "target": {"value": "1000m"}}
    assert server_form.as_stored(other) is other


def test_string_data_is_merged_into_data_as_base64():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
              "data": {"a": "YQ==", "b": "Yg=="}, "stringData": {"b": "bé", "c": "c"}}
    stored = server_form.as_stored(secret)
    assert "stringData" not in stored
    assert stored["data"] == {"a": "YQ==", "b": base64.b64encode("bé".encode()).decode(), "c": "Yw=="}
    assert "stringData" in secret


def owned(*paths):
    return {f"f:{p}": {} for p in paths}


def test_zero_values_the_server_drops_are_contained_while_we_own_them():
    desired = {"spec": {"hostNetwork": False, "replicas": 0, "subPath": "", "env": [], "labels": {},
                        "creationTimestamp": None}}
    live = {"spec": {}}
    ours = {"f:spec": owned("hostNetwork", "replicas", "subPath")}
    assert nochange.contains(desired, live, ours)
    # somebody removed a field: server-side apply took it from us too, so it is drift
    assert not nochange.contains(desired, live, {"f:spec": owned("hostNetwork", "subPath")})
    assert not nochange.contains(desired, live)
    # a value that is there is compared strictly, owned or not
    assert not nochange.contains({"spec": {"hostNetwork": False}}, {"spec": {"hostNetwork": True}}, ours)


def test_list_elements_find_their_owned_fields_by_key():
    desired = {"ports": [{"containerPort": 80, "hostPort": 0}]}
    live = {"ports": [{"containerPort": 80, "protocol": "TCP"}]}
    ours = {"f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': owned("containerPort", "hostPort")}}
    assert nochange.contains(desired, live, ours)
    assert not nochange.contains(desired, live, {"f:ports": {'k:{"containerPort":81,"protocol":"TCP"}': {}}})


def test_a_null_creation_timestamp_is_not_compared_and_an_owned_null_takes_any_value():
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": None},
            "data": {"a": None}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": "2026-11-27T06:14:21Z"},
            "data": {"a": ""}}
    assert "creationTimestamp" not in server_form.as_stored(body)["metadata"]
    assert nochange.contains(server_form.as_stored(body), live, {"f:data": {"f:a": {}}})
    assert not nochange.contains(server_form.as_stored(body), live, {"f:data": {}})  # not ours: strict
