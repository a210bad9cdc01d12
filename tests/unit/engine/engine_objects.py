"""Objects and server behaviours that several of the engine's test files share: an existing parent
(claimed or not), a CRD, a Service, a Job whose change the server refuses as immutable, an object as
`kubectl apply` (client-side) left it."""

import json

from applyset import spec
from applyset.run.options import DEFAULT_FIELD_MANAGER

from fakeapi import ID


def existing_parent(api, labels=None, annotations=None):
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "shop", "namespace": "shop", "labels": labels if labels is not None else {spec.LABEL_ID: ID},
        "annotations": annotations if annotations is not None else {
            spec.ANNOTATION_TOOLING: spec.tooling_value(), spec.ANNOTATION_GROUP_KINDS: "ConfigMap"}}})


def claim_of(run_id, expires):
    return json.dumps({"run": run_id, "expires": expires})


def claimed_parent(api, expires):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap",
                                      spec.ANNOTATION_CLAIM: claim_of("other-host/1/abcd", expires)})


def svc(name):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}


def crd(plural, kind, group="example.com", scope="Namespaced", served=True, labels=None):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", **({"labels": labels} if labels else {})},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": served, "storage": True}]}}


IMMUTABLE_OBJECTS = {"/apis/batch/v1/namespaces/shop/jobs/mig": ("batch/v1", "Job", "mig"),
                     "/api/v1/namespaces/shop/persistentvolumeclaims/data": ("v1", "PersistentVolumeClaim", "data")}


def immutable_refusal(api, path):
    """As the real server does: every real apply that changes the field of the existing object is
    refused (the run's first attempt without the claim, and its normal path after it)."""
    api_version, kind, name = IMMUTABLE_OBJECTS[path]
    api.fail("PATCH", path, 422, "Job.batch \"mig\" is invalid: spec.template: field is immutable",
             reason="Invalid", causes=[{"reason": "FieldValueInvalid", "field": "spec.template",
                                        "message": "Invalid value: {}: field is immutable"}],
             times=None,
             when=lambda r: (not r.dry_run and r.query.get("fieldManager") == DEFAULT_FIELD_MANAGER
                             and api.object(api_version, kind, name, "shop") is not None))


def job(image):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mig"},
            "spec": {"template": {"spec": {"containers": [{"name": "m", "image": image}]}}}}


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def kubectl_applied(api, name, data):
    """An object as `kubectl apply` (client-side) left it: its fields owned by an Update entry."""
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "data": data, "metadata": {
        "name": name, "namespace": "shop", "annotations": {LAST_APPLIED: json.dumps({"data": data})},
        "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
                           "fieldsType": "FieldsV1", "fieldsV1": {
                               "f:data": {f"f:{key}": {} for key in data},
                               "f:metadata": {"f:annotations": {f"f:{LAST_APPLIED}": {}}}}}]}})
