"""Moving field ownership from client-side tools to our apply manager (csa.py)."""

from __future__ import annotations

from applyset import csa

OURS = "applyset.kubernetes"
LAST_APPLIED = {"f:kubectl.kubernetes.io/last-applied-configuration": {}}


def entry(manager, operation, fields, api_version="v1", **extra):
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": "2026-11-23T10:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": fields, **extra}


def test_fields_v1_round_trips_through_paths():
    trie = {"f:data": {"f:a": {}, "f:b": {}},
            "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}}
    paths = csa.field_paths(trie)
    assert ("f:data", "f:a") in paths and ("f:data",) not in paths
    assert ("f:spec", "f:containers", 'k:{"name":"web"}') in paths  # "." marks the item itself
    assert csa.fields_v1(paths) == trie


def test_client_side_apply_fields_all_become_ours_and_ask_for_a_second_apply():
    fields = [
        entry(OURS, "Apply", {"f:data": {"f:a": {}}}),
        entry("kubectl-client-side-apply", "Update",
              {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:annotations": {".": {}, **LAST_APPLIED},
                                                                  "f:labels": {".": {}, "f:tier": {}}}}),
        entry("kube-controller-manager", "Update", {"f:metadata": {"f:labels": {"f:owner": {}}}}),
    ]
    migration = csa.plan(fields, OURS)
    assert migration.whole == ["kubectl-client-side-apply"] and migration.needs_reapply
    managers = [e["manager"] for e in migration.managed_fields]
    assert managers == [OURS, "kube-controller-manager"]  # the controller's entry is untouched
    ours = csa.field_paths(migration.managed_fields[0]["fieldsV1"])
    assert {("f:data", "f:b"), ("f:metadata", "f:labels", "f:tier")} <= ours
    assert ("f:metadata", "f:annotations", "f:kubectl.kubernetes.io/last-applied-configuration") in ours


def test_other_api_versions_of_the_client_side_manager_are_dropped_not_merged():
    fields = [
        entry(OURS, "Apply", {"f:spec": {"f:replicas": {}}}, api_version="apps/v1"),
        entry("kubectl-client-side-apply", "Update", {"f:metadata": {"f:annotations": LAST_APPLIED},
                                                     "f:spec": {"f:paused": {}}}, api_version="apps/v1beta1"),
    ]
    migration = csa.plan(fields, OURS)
    assert [e["manager"] for e in migration.managed_fields] == [OURS]
    assert csa.field_paths(migration.managed_fields[0]["fieldsV1"]) == {("f:spec", "f:replicas")}


def test_imperative_managers_give_up_only_the_fields_the_manifest_sets():
    fields = [
        entry(OURS, "Apply", {"f:data": {"f:a": {}}}),
        entry("kubectl-create", "Update", {"f:data": {"f:a": {}, "f:b": {}}}),
        entry("kubectl-patch", "Update", {"f:data": {"f:a": {}}}),
        entry("kubectl-label", "Update", {"f:metadata": {"f:labels": {"f:team": {}}}}),
    ]
    migration = csa.plan(fields, OURS)
    assert sorted(migration.shared) == ["kubectl-create", "kubectl-patch"] and not migration.needs_reapply
    by_manager = {e["manager"]: csa.field_paths(e["fieldsV1"]) for e in migration.managed_fields}
    assert by_manager["kubectl-create"] == {("f:data", "f:b")}
    assert "kubectl-patch" not in by_manager  # everything it had is ours now
    assert by_manager["kubectl-label"] == {("f:metadata", "f:labels", "f:team")}  # a person's label stays theirs


def test_nothing_to_move_gives_none():
    fields = [entry(OURS, "Apply", {"f:data": {"f:a": {}}}),
              entry("some-operator", "Update", {"f:data": {"f:a": {}}}),
              entry("kubectl-create", "Update", {"f:data": {"f:z": {}}}),
              entry("kubectl-client-side-apply", "Update", {"f:status": {}}, subresource="status")]
    assert csa.plan(fields, OURS) is None
    assert csa.plan([entry("kubectl-create", "Update", {"f:data": {"f:a": {}}})], OURS) is None  # no entry of ours


def test_the_patch_guards_with_the_resource_version():
    migration = csa.plan([entry(OURS, "Apply", {"f:data": {"f:a": {}}}),
                          entry("kubectl-create", "Update", {"f:data": {"f:a": {}}})], OURS)
    ops = csa.patch(migration, "42")
    assert ops[0]["path"] == "/metadata/managedFields" and ops[1] == {
        "op": "replace", "path": "/metadata/resourceVersion", "value": "42"}
