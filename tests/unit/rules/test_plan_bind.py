"""What a plan binds beside the bodies' digests (rules/plan_bind.py), the set's plan key
(parent/plan_key.py), and the reasons an approved plan's refusal gives for them (plan_diff.py)."""

from __future__ import annotations

import base64

from applyset.kube.discovery import Resource
from applyset.parent import plan_key
from applyset.rules import plan_bind, plan_diff
from applyset.rules import plan_id as plans

KEY = b"k" * 32
SECRETS = Resource("", "v1", "Secret", "secrets", True)
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)


def secret(**values):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"},
            "type": "Opaque", **values}


def web(image="nginx:1.27", **container):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "web", "image": image, **container}]}}}}


def test_a_secret_s_values_are_bound_by_a_keyed_digest_that_does_not_show_them():
    one = plan_bind.values_digest(secret(stringData={"password": "hunter2"}), KEY)
    assert one is not None and len(one) == 16 and "hunter2" not in one
    assert plan_bind.values_digest(secret(stringData={"password": "hunter3"}), KEY) != one
    assert plan_bind.values_digest(secret(data={"password": "aHVudGVyMg=="}), KEY) != one
    # Another set's key gives another digest: a guess cannot be tested without the key.
    assert plan_bind.values_digest(secret(stringData={"password": "hunter2"}), b"x" * 32) != one


def test_no_values_digest_without_a_key_nor_for_other_kinds():
    assert plan_bind.values_digest(secret(stringData={"a": "b"}), None) is None
    assert plan_bind.values_digest(secret(), KEY) is None
    assert plan_bind.values_digest(web(), KEY) is None


def test_the_start_follows_a_field_the_body_sends_and_not_one_only_others_set():
    body = web("nginx:1.28")
    live = web("nginx:1.27", imagePullPolicy="IfNotPresent")
    live["status"] = {"replicas": 1}
    start = plan_bind.start_digest(body, live, None)
    hotfix = web("nginx:1.27-hotfix", imagePullPolicy="IfNotPresent")
    assert plan_bind.start_digest(body, hotfix, None) != start
    others = web("nginx:1.27", imagePullPolicy="Always")  # a field the body does not send
    others["metadata"]["labels"] = {"team": "a"}
    others["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    others["status"] = {"replicas": 3}
    assert plan_bind.start_digest(body, others, None) == start


def test_containers_are_matched_by_name_and_a_missing_field_is_told_from_a_null():
    body = web()
    body["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "busybox"})
    live = web()
    live["spec"]["template"]["spec"]["containers"].insert(0, {"name": "log", "image": "busybox"})
    swapped = web()
    swapped["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "busybox"})
    assert plan_bind.start_digest(body, live, None) == plan_bind.start_digest(body, swapped, None)
    gone = web()
    gone["spec"].pop("replicas")
    nulled = web()
    nulled["spec"]["replicas"] = None
    assert plan_bind.start_digest(web(), gone, None) != plan_bind.start_digest(web(), nulled, None)


def test_a_secret_s_start_is_keyed_or_leaves_its_values_out():
    body = secret(stringData={"password": "new"})
    live = secret(data={"password": base64.b64encode(b"old").decode()})
    edited = secret(data={"password": base64.b64encode(b"edited").decode()})
    assert plan_bind.start_digest(body, live, KEY) != plan_bind.start_digest(body, edited, KEY)
    assert plan_bind.start_digest(body, live, None) == plan_bind.start_digest(body, edited, None)


def test_a_field_left_to_others_is_not_projected():
    body = web()
    body["spec"]["replicas"] = plan_bind.HIDDEN
    scaled = web()
    scaled["spec"]["replicas"] = 5
    assert plan_bind.start_digest(body, web(), None) == plan_bind.start_digest(body, scaled, None)


def test_the_plan_key_is_read_from_a_secret_parent_only():
    key = plan_key.new()
    obj = {"metadata": {"name": "shop"}, "data": plan_key.data(key)}
    assert plan_key.read(SECRETS, obj) == key and len(key) == 32
    assert plan_key.read(CONFIGMAPS, obj) is None
    assert plan_key.read(SECRETS, {"metadata": {}}) is None
    assert plan_key.read(SECRETS, {"data": {plan_key.DATA_KEY: "not base64!"}}) is None
    assert plan_key.read(SECRETS, {"data": {plan_key.DATA_KEY: base64.b64encode(b"short").decode()}}) is None
    assert plan_key.new() != key


def _entry(action="configure", **fields):
    return plans.entry("Secret shop/db", action, body="AAAA", **fields)


def test_a_refusal_names_a_secret_whose_values_changed_without_showing_them():
    for action in (plans.CREATE, plans.CONFIGURE):
        lines = plan_diff.differences([_entry(action, values="v1")], [_entry(action, values="v2")])
        assert lines == [f"Secret shop/db: approved {action} (values=v1), now {action} (values=v2): "
                         "its values were changed in the manifests since"]
    assert plan_diff.differences([_entry(values=None)], [_entry(values="v2")])[0].endswith(
        "the set got its plan key since, so its values are bound now and were not when it was approved")


def test_a_refusal_names_a_member_changed_on_the_cluster_after_the_preview():
    lines = plan_diff.differences([_entry(start="s1")], [_entry(start="s2")])
    assert lines == ["Secret shop/db: approved configure (start=s1), now configure (start=s2): "
                     "it was changed on the cluster since, in a field the plan sends"]


def test_the_new_fields_leave_the_id_of_a_plan_without_them_as_it_was():
    plan = [plans.entry("ApplySet Secret shop/shop", plans.SET_APPLY, id="applyset-abc-v1"),
            plans.entry("ConfigMap shop/é", plans.CREATE, body="x", wave=-1, after=["Job.batch shop/m"], values=None,
                        start=None),
            plans.entry("ConfigMap shop/old", plans.PRUNE, uid="u-1")]
    assert plans.digest(plan) == "plan-v1:7bb9160019d8599a9afdea01"
