"""Pure rules of issue 29: drift from managedFields, ignore_fields resolution, wait reasons."""

from __future__ import annotations

from plugins.module_utils.applyset.rules import drift, field_policy, nochange
from plugins.module_utils.applyset.wait import reasons as wait_reasons

MANAGER = "applyset.kubernetes"


def entry(manager, fields, operation="Apply", time="2026-11-25T04:00:00Z", subresource=None):
    e = {"manager": manager, "operation": operation, "time": time, "fieldsV1": fields}
    if subresource:
        e["subresource"] = subresource
    return e


def deploy(image="app:1", replicas=2):
    return nochange.with_digest({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                 "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                                     {"name": "app", "image": image}]}}}})


OURS = {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {
    ".": {}, "f:name": {}, "f:image": {}}}}}}}


def live_of(body, entries):
    live = {**body, "metadata": {**body["metadata"], "managedFields": entries}}
    return live


def test_none_when_the_digest_matches_and_nobody_took_a_field():
    body = deploy()
    assert drift.classify(body, live_of(body, [entry(MANAGER, OURS)]), MANAGER) == drift.Drift("none")


def test_cluster_changed_names_the_manager_and_the_field_it_took():
    body = deploy()
    ours = {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {
        ".": {}, "f:name": {}}}}}}}
    theirs = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}}}
    live = live_of(body, [entry(MANAGER, ours), entry("kubectl-set", theirs, "Update")])
    found = drift.classify(body, live, MANAGER)
    assert found.kind == "cluster_changed"
    assert found.changed_by == ({"manager": "kubectl-set", "operation": "Update", "time": "2026-11-25T04:00:00Z",
                                 "fields": [".spec.template.spec.containers[name=app].image"]},)


def test_a_field_shared_with_another_manager_is_not_taken():
    body = deploy()
    live = live_of(body, [entry(MANAGER, OURS), entry("other", {"f:spec": {"f:replicas": {}}})])
    assert drift.classify(body, live, MANAGER).kind == "none"


def test_manifest_changed_both_and_missing():
    old = deploy("app:1")
    new = deploy("app:2")
    theirs = {"f:spec": {"f:replicas": {}}}
    ours = {"f:spec": {"f:template": OURS["f:spec"]["f:template"]}}
    assert drift.classify(new, live_of(old, [entry(MANAGER, OURS)]), MANAGER).kind == "manifest_changed"
    assert drift.classify(new, live_of(old, [entry(MANAGER, ours), entry("hpa", theirs, "Update", subresource="scale")]),
                          MANAGER).kind == "both"
    assert drift.classify(new, None, MANAGER, was_member=True).kind == "missing"
    assert drift.classify(new, None, MANAGER).kind == "manifest_changed"


def test_ignore_fields_left_to_another_owner_or_kept_as_live():
    rule = field_policy.parse_rules([{"kind": "Deployment", "json_pointers": ["/spec/replicas"]}])[0]
    body = deploy(replicas=2)
    live = live_of(deploy(replicas=5), [entry(MANAGER, OURS)])
    done = []
    kept = field_policy._resolve_rule(body, live, rule, MANAGER, done)  # pylint: disable=protected-access
    assert kept["spec"]["replicas"] == 5 and done[0]["action"] == "kept live value"
    live = live_of(deploy(replicas=5), [entry(MANAGER, {"f:spec": {}}),
                                         entry("kubectl", {"f:spec": {"f:replicas": {}}}, "Update", subresource="scale")])
    done = []
    left = field_policy._resolve_rule(body, live, rule, MANAGER, done)  # pylint: disable=protected-access
    assert "replicas" not in left["spec"] and done == [{"pointer": "/spec/replicas", "action": "left to others",
                                                        "owners": ["kubectl"]}]
    assert body["spec"]["replicas"] == 2  # the manifest's body is never changed in place


def test_apply_policies_from_our_annotation_and_flux():
    def with_annotation(key, value):
        return {"metadata": {"annotations": {key: value}}}
    assert field_policy.apply_policy(with_annotation(field_policy.ANNOTATION_APPLY, "create-only")) == "create-only"
    assert field_policy.apply_policy(with_annotation(field_policy.FLUX_SSA, "IfNotPresent")) == "create-only"
    assert field_policy.apply_policy(with_annotation(field_policy.FLUX_SSA, "Ignore")) == "ignore"
    assert field_policy.apply_policy(with_annotation(field_policy.FLUX_SSA, "Merge")) is None


def test_a_bad_rule_is_refused_naming_it():
    try:
        field_policy.parse_rules([{"kind": "Deployment", "json_pointers": ["spec.replicas"]}])
    except Exception as err:  # noqa: BLE001
        assert "ignore_fields[0]" in str(err) and "JSON pointer" in str(err)
    else:
        raise AssertionError("not refused")


def test_a_container_waiting_reason_is_the_cause():
    pod = {"metadata": {"name": "web-1", "uid": "u1"}, "status": {"phase": "Pending", "containerStatuses": [
        {"name": "app", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff",
                                                                 "message": "Back-off pulling image \"nope:1\""}}}]}}
    event = {"involvedObject": {"kind": "Pod", "name": "web-1", "uid": "u1"}, "reason": "Failed",
             "message": "Failed to pull image", "lastTimestamp": "2026-11-25T04:00:00Z"}
    state = wait_reasons._pod_state(pod, [event])  # pylint: disable=protected-access
    assert state["containers"][0]["reason"] == "ImagePullBackOff"
    assert state["events"][0]["reason"] == "Failed"
    cause = wait_reasons._cause({"pods": [state]})  # pylint: disable=protected-access
    assert cause.startswith("pod web-1 container app: ImagePullBackOff")


def refused(pointer):
    try:
        field_policy.parse_rules([{"kind": "Deployment", "json_pointers": ["/spec/replicas", pointer]}])
    except Exception as err:  # noqa: BLE001
        return str(err)
    return None


def test_identity_and_set_fields_are_refused_naming_the_rule_and_the_fix():
    for pointer in ("/kind", "/apiVersion", "/metadata", "/metadata/name", "/metadata/namespace", "/metadata/labels",
                    "/metadata/annotations", "/metadata/labels/applyset.kubernetes.io~1part-of",
                    "/metadata/annotations/applyset.kubernetes.ansible~1applied-digest", "/metadata/name/x"):
        message = refused(pointer)
        assert message and "ignore_fields[0]" in message and pointer in message and "Fix:" in message, pointer
    for pointer in ("/metadata/labels/app", "/metadata/annotations/a~1b", "/spec/template/spec/containers/0/image"):
        assert refused(pointer) is None, pointer


def test_a_malformed_escape_is_refused():
    message = refused("/spec/~2x")
    assert message and "'~2' is no escape" in message
    assert refused("/data/a~0b~1c") is None
    rule = field_policy.parse_rules([{"kind": "ConfigMap", "json_pointers": ["/data/a~0b~1c"]}])[0]
    assert rule.pointers == (("/data/a~0b~1c", ("data", "a~b/c")),)


class _Resource:
    def __init__(self, kind, group="apps"):
        self.kind, self.group = kind, group


class _Member:
    def __init__(self, kind, body, group="apps", name="web"):
        self.resource, self.body, self.name, self.namespace = _Resource(kind, group), body, name, "ns"


def test_a_rule_that_matches_nothing_warns_with_the_nearest_kind():
    members = [_Member("Deployment", deploy()), _Member("ConfigMap", {"data": {}}, group="")]
    rules = field_policy.parse_rules([{"kind": "Deploymnet", "json_pointers": ["/spec/replicas"]},
                                      {"kind": "Deployment", "json_pointers": ["/spec/replicas", "/spec/paused"]},
                                      {"kind": "Deployment", "name": "api", "json_pointers": ["/spec/replicas"]}])
    warnings = field_policy.unused_rules(rules, members)
    assert len(warnings) == 3, warnings
    assert "ignore_fields[0]" in warnings[0] and "did you mean kind Deployment?" in warnings[0]
    assert "ignore_fields[1]" in warnings[1] and "/spec/paused matches no field" in warnings[1]
    assert "ignore_fields[2]" in warnings[2] and "matches no member" in warnings[2] and "did you mean" not in warnings[2]


def test_the_digest_hides_ignored_values_but_not_whether_they_are_set():
    pointers = (("spec", "replicas"),)
    two, five = field_policy.digest_source(deploy(replicas=2), pointers), field_policy.digest_source(deploy(replicas=5),
                                                                                                      pointers)
    assert nochange.request_digest(two) == nochange.request_digest(five)
    without = deploy()
    del without["spec"]["replicas"]
    assert nochange.request_digest(field_policy.digest_source(without, pointers)) != nochange.request_digest(two)


def test_fields_left_to_others_are_cluster_changed_and_say_so():
    manifest = deploy(replicas=2)
    sent = nochange.with_digest({**manifest, "spec": {k: v for k, v in manifest["spec"].items() if k != "replicas"}},
                                digest_of=manifest)
    ours = {"f:spec": {"f:template": OURS["f:spec"]["f:template"]}}
    live = live_of({**sent, "spec": {**sent["spec"], "replicas": 5}},
                   [entry(MANAGER, ours), entry("kubectl", {"f:spec": {"f:replicas": {}}}, "Update", subresource="scale")])
    found = drift.classify(sent, live, MANAGER, manifest_body=manifest)
    assert found.kind == "cluster_changed" and found.left_to_others
    assert [c["manager"] for c in found.changed_by] == ["kubectl"]
    assert drift.classify(sent, live, MANAGER) == drift.Drift("none")  # without the manifest: nobody took a field


def test_the_audit_does_not_count_fields_left_to_their_owner_as_drift():
    from plugins.filter.manifest_drift import manifest_drift  # pylint: disable=import-outside-toplevel
    objects = [{"kind": "Deployment", "name": "web", "drift": "cluster_changed", "drift_left_to_others": True,
                "changed_by": [{"manager": "hpa", "fields": [".spec.replicas"]}]},
               {"kind": "ConfigMap", "name": "cfg", "drift": "cluster_changed"},
               {"kind": "ConfigMap", "name": "same", "drift": "none"}]
    report = manifest_drift(["h"], {"h": {"audit__previews": {"results": [{"item": {"parent": "p"}, "objects": objects}]}}})
    assert report["drifted_members"] == 1
    assert [m["left_to_others"] for m in report["sets"][0]["members"]] == [True, False, False]


def test_a_members_drift_is_marked_from_values_not_the_run():
    """drift.mark takes what the run found (a Basis), not the run: a member the parent records and
    that is not listed is missing; the policies' reason and fields go into its result."""
    from types import SimpleNamespace  # pylint: disable=import-outside-toplevel
    from plugins.module_utils.applyset import spec
    from plugins.module_utils.applyset.parent import members  # pylint: disable=import-outside-toplevel
    from plugins.module_utils.applyset.run.report import MemberOutcome, ObjectResult
    key = spec.ObjectId("apps", "Deployment", "shop", "web")
    member = SimpleNamespace(key=key, body=deploy(), resource=SimpleNamespace(group_kind="Deployment.apps"))
    policies = field_policy.Policies(reasons={key: "create-only: it exists, so it is not updated"},
                                     fields={key: [{"pointer": "/spec/replicas", "action": "left out"}]})
    outcome = MemberOutcome(ObjectResult("apps/v1", "Deployment", "shop", "web", "created"))
    basis = drift.Basis(live={}, record=frozenset({members.digest(key)}), policies=policies, field_manager=MANAGER,
                        dry_run=True)
    result = drift.mark(member, outcome, basis).result
    assert result.drift == "missing" and result.reason == "create-only: it exists, so it is not updated"
    assert result.ignored_fields == [{"pointer": "/spec/replicas", "action": "left out"}]
    unmarked = MemberOutcome(ObjectResult("apps/v1", "Deployment", "shop", "web", "created"))
    assert drift.mark(member, unmarked, drift.Basis({}, None, None, MANAGER, False)).result.drift == "manifest_changed"


def test_policies_are_resolved_from_the_rules_members_and_live_objects_given():
    from types import SimpleNamespace  # pylint: disable=import-outside-toplevel
    from plugins.module_utils.applyset import spec
    key = spec.ObjectId("apps", "Deployment", "shop", "web")
    skipped = {**deploy(), "metadata": {"name": "web", "annotations": {field_policy.ANNOTATION_APPLY: "create-only"}}}
    member = SimpleNamespace(key=key, body=skipped, resource=SimpleNamespace(kind="Deployment", group="apps"),
                             name="web", namespace="shop")
    live = {key: SimpleNamespace(obj=live_of(deploy(), [entry(MANAGER, OURS)]), uid="u-1")}
    rules = field_policy.parse_rules([{"kind": "Deployment", "json_pointers": ["/spec/replicas"]}])
    policies = field_policy.resolve(rules, [member], live, MANAGER)
    assert policies.skipped == {key: "u-1"} and "create-only" in policies.reasons[key]
    assert field_policy.resolve(rules, [member], {}, MANAGER).skipped == {}
