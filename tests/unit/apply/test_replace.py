"""Immutable refusals and missing namespaces: reading the server's Status, and the recreate choices.

Status bodies are the API server's own answers (kube-apiserver 1.34), shortened where they quote
whole objects; the integration tests in test_namespaces_and_replace.py check the real thing.
"""

import pytest
from applyset import engine
from applyset.run.options import Options
from applyset.rules import plan
from applyset.apply import recreate as recreate_strategy
from applyset.errors import ApiError, ConflictError, immutable_refusal, missing_namespace
from applyset.kube.discovery import Discovery, Resource
from applyset.kube.http_requests import Response
from applyset.inputs.manifests import load_definition

JOB_TEMPLATE_DUMP = '{"labels":{"job-name":"mig"},"Spec":{"Containers":[{"Name":"m","Image":"busybox:2"}]}}'


def status(code, reason, message, causes=None, **details):
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason,
            "code": code, "details": dict(details)}
    if causes is not None:
        body["details"]["causes"] = causes
    cls = ConflictError if code == 409 else ApiError
    return cls(message, status=code, reason=reason, body=body)


def invalid(*causes):
    return status(422, "Invalid", "X is invalid: " + ", ".join(f"{c['field']}: {c['message']}" for c in causes),
                  [dict(c, reason=c.get("reason", "FieldValueInvalid")) for c in causes], name="x", kind="Job")


def test_a_job_template_refusal_names_the_field_without_the_dump():
    err = invalid({"field": "spec.template", "message": f"Invalid value: {JOB_TEMPLATE_DUMP}: field is immutable"})
    assert immutable_refusal(err) == [("spec.template", "spec.template: field is immutable")]


def test_a_deployment_selector_and_other_wordings_count_as_immutable():
    selector = invalid({"field": "spec.selector", "message": 'Invalid value: {"matchLabels":{"a":"2"}}: '
                        "field is immutable"})
    assert immutable_refusal(selector) == [("spec.selector", "spec.selector: field is immutable")]
    cluster_ip = invalid({"field": "spec.clusterIPs[0]", "message": 'Invalid value: []string{"10.0.0.9"}: '
                          "may not change once set"})
    assert immutable_refusal(cluster_ip) == [("spec.clusterIPs[0]", "spec.clusterIPs[0]: may not change once set")]
    statefulset = invalid({"field": "spec", "reason": "FieldValueForbidden", "message": (
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")})
    [(fld, text)] = immutable_refusal(statefulset)
    assert fld == "spec" and text.startswith("spec: Forbidden: updates to statefulset spec")


def test_a_refusal_with_any_other_cause_is_not_an_immutable_one():
    mixed = invalid({"field": "spec.template", "message": "Invalid value: {}: field is immutable"},
                    {"field": "spec.template.spec.restartPolicy", "reason": "FieldValueNotSupported",
                     "message": 'Unsupported value: "Always": supported values: "OnFailure", "Never"'})
    assert immutable_refusal(mixed) == []  # recreating would not help: the new object is invalid too
    plain = invalid({"field": "spec.replicas", "message": "Invalid value: -1: must be greater than or equal to 0"})
    assert immutable_refusal(plain) == []


def test_only_a_422_is_read_and_long_messages_are_cut():
    forbidden = status(403, "Forbidden", "jobs.batch is forbidden: field is immutable")
    assert immutable_refusal(forbidden) == []
    long_message = "Forbidden: " + "x" * 500 + " immutable"
    [(fld, text)] = immutable_refusal(invalid({"field": "spec", "message": long_message}))
    assert fld == "spec" and text.endswith("...") and len(text) < 220
    no_causes = status(422, "Invalid", "spec: field is immutable")
    assert immutable_refusal(no_causes) == [("", "spec: field is immutable")]


def test_missing_namespace_reads_the_not_found_status():
    err = status(404, "NotFound", 'namespaces "argocd" not found', name="argocd", kind="namespaces")
    assert missing_namespace(err) == "argocd"
    other = status(404, "NotFound", 'configmaps "a" not found', name="a", kind="configmaps")
    assert missing_namespace(other) is None
    assert missing_namespace(status(403, "Forbidden", "no")) is None
    assert missing_namespace(ValueError("not an API error")) is None


# ----- the recreate choice ------------------------------------------------------------------------

RESOURCES = [
    Resource("", "v1", "ConfigMap", "configmaps", True),
    Resource("", "v1", "Namespace", "namespaces", False),
    Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    Resource("batch", "v1", "Job", "jobs", True),
]


def members(*docs):
    return plan.build(load_definition(list(docs)), Discovery(list(RESOURCES)), "applyset-x-v1", "default").members


def job(strategy=None, name="mig"):
    meta = {"name": name}
    if strategy:
        meta["annotations"] = {plan.ANNOTATION_UPDATE_STRATEGY: strategy}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {}}


@pytest.mark.parametrize("strategy, kinds, expected", [
    (None, [], "apply"),
    (None, ["Job"], "recreate-on-immutable"),
    (None, ["Job.batch"], "recreate-on-immutable"),
    (None, ["Job.other"], "apply"),
    ("recreate-on-immutable", [], "recreate-on-immutable"),
    ("apply", ["Job"], "apply"),
])
def test_the_annotation_wins_over_the_kind_list(strategy, kinds, expected):
    [member] = members(job(strategy))
    assert plan.update_strategy(member, frozenset(kinds)) == expected


def test_protected_kinds_and_unknown_values_are_input_errors():
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "data", "annotations": {plan.ANNOTATION_UPDATE_STRATEGY: "recreate-on-immutable"}}}
    found = plan.recreate_problems(members(claim, job("always")), frozenset({"Namespace", "Job"}))
    texts = [str(p) for p in found]
    assert len(texts) == 3
    assert "recreate_on_immutable lists protected kinds: Namespace" in texts[0]
    assert "never deleted to be created again" in texts[1] and "PersistentVolumeClaim default/data" in texts[1]
    assert "unknown value 'always'" in texts[2] and "apply, recreate-on-immutable" in texts[2]
    assert plan.recreate_problems(members(job("apply")), frozenset({"Job"})) == []


# ----- the recreate steps, against a stub client -----------------------------------------------------


class StubClient:
    """Answers the few calls a recreate makes; records them in order."""

    def __init__(self, create_error=None, delete_error=None, gone_after=0):
        self.calls = []
        self.create_error = create_error
        self.delete_error = delete_error
        self.gets_left = gone_after

    def create(self, res, obj, *, field_manager, dry_run=False):
        self.calls.append(("create", dry_run))
        raise self.create_error or status(409, "AlreadyExists", 'jobs.batch "mig" already exists')

    def delete(self, res, name, namespace, *, uid=None, propagation_policy="Background", dry_run=False):
        self.calls.append(("delete", uid))
        if self.delete_error:
            raise self.delete_error

    def get(self, res, name, namespace=None):
        self.calls.append(("get",))
        if self.gets_left:
            self.gets_left -= 1
            return {"metadata": {"name": name, "uid": "old-uid", "finalizers": ["example.com/hold"]}}
        return None

    def apply(self, res, obj, **kwargs):
        self.calls.append(("apply",))
        return Response(201, {**obj, "metadata": {**obj["metadata"], "uid": "new-uid"}}, [])


def recreate(client, dry_run=False, recreate_timeout=5.0):
    run = engine.Engine(client, "set", "default", Options(dry_run=dry_run, recreate_timeout=recreate_timeout))
    [member] = members(job())
    before = {"metadata": {"name": "mig", "namespace": "default", "uid": "old-uid"}}
    return recreate_strategy.recreate(run._ctx, member, before, "spec.template: field is immutable").result


def test_recreate_validates_deletes_with_the_uid_waits_and_applies():
    client = StubClient(gone_after=1)
    result = recreate(client)
    assert result.action == "replaced" and result.uid == "new-uid"
    assert client.calls == [("create", True), ("delete", "old-uid"), ("get",), ("get",), ("apply",)]


def test_check_mode_only_validates():
    client = StubClient()
    result = recreate(client, dry_run=True)
    assert result.action == "replaced" and "would be replaced" in result.reason and result.uid == "old-uid"
    assert client.calls == [("create", True)]


def test_a_replacement_the_server_refuses_leaves_the_object_alone():
    refused = invalid({"field": "spec.template.spec.restartPolicy", "message": 'Unsupported value: "Always"'})
    client = StubClient(create_error=refused)
    result = recreate(client)
    assert result.action == "failed" and "so it was not deleted" in result.reason
    assert client.calls == [("create", True)]


def test_a_uid_precondition_failure_stops_the_recreate():
    client = StubClient(delete_error=status(409, "Conflict", "Precondition failed: UID in precondition: old-uid"))
    result = recreate(client)
    assert result.action == "failed" and "replaced by someone else" in result.reason
    assert ("apply",) not in client.calls


def test_an_object_held_by_a_finalizer_is_reported_after_the_timeout():
    client = StubClient(gone_after=10_000)
    result = recreate(client, recreate_timeout=0.0)
    assert result.action == "failed" and "finalizers: example.com/hold" in result.reason
    assert ("apply",) not in client.calls
