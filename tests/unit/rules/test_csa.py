"""Moving field ownership from client-side tools to our apply manager (csa.py)."""

from __future__ import annotations

from applyset.rules import csa

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


# ----- a rollback's takeover of the set's other release managers (merge_releases) ---------------------


def test_a_rollback_takes_every_field_of_the_sets_other_release_managers_whole():
    fields = [
        entry("release-a", "Apply", {"f:data": {"f:a": {}}}),
        entry("release-b", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}),
        entry("release-b", "Update", {"f:metadata": {"f:labels": {"f:part-of": {}}}}),
        entry("release-b", "Update", {"f:status": {"f:ready": {}}}, subresource="status"),
        entry("release-c", "Apply", {"f:data": {"f:c": {}}}, api_version="v2"),
        entry("kube-controller-manager", "Update", {"f:data": {"f:d": {}}}),
    ]
    migration = csa.merge_releases(fields, "release-a", {"release-a", "release-b", "release-c"}, "v1")
    assert migration.releases == ["release-b"] and not migration.needs_reapply
    assert "release-b (earlier releases of this set)" in migration.describe()
    managers = [(e["manager"], e["operation"], e.get("subresource")) for e in migration.managed_fields]
    # status, another API version and another tool's entry stay as they are
    assert managers == [("release-a", "Apply", None), ("release-b", "Update", "status"),
                        ("release-c", "Apply", None), ("kube-controller-manager", "Update", None)]
    assert csa.field_paths(migration.managed_fields[0]["fieldsV1"]) == {
        ("f:data", "f:a"), ("f:data", "f:b"), ("f:metadata", "f:labels", "f:part-of")}
    assert fields[1]["manager"] == "release-b"  # the input is left as it was


def test_a_rollback_under_a_new_manager_gets_an_apply_entry_made_of_the_others():
    fields = [entry("release-b", "Apply", {"f:data": {"f:b": {}}}), entry("kubectl", "Update", {"f:data": {}})]
    migration = csa.merge_releases(fields, "rollback", {"release-b"}, "v1")
    ours = migration.managed_fields[-1]
    assert (ours["manager"], ours["operation"], ours["apiVersion"]) == ("rollback", "Apply", "v1")
    assert csa.field_paths(ours["fieldsV1"]) == {("f:data", "f:b")}
    assert [e["manager"] for e in migration.managed_fields] == ["kubectl", "rollback"]


def test_nothing_to_merge_without_entries_of_the_sets_other_managers():
    fields = [entry(OURS, "Apply", {"f:data": {"f:a": {}}}), entry("someone-else", "Apply", {"f:data": {}})]
    assert csa.merge_releases(fields, OURS, {OURS}, "v1") is None
    assert csa.merge_releases(fields, OURS, frozenset(), "v1") is None
    assert csa.merge_releases(None, OURS, {"release-b"}, "v1") is None


def test_release_fields_beyond_ours_tells_a_leftover_from_a_shared_field():
    shared = [entry(OURS, "Apply", {"f:data": {"f:a": {}, "f:b": {}}}), entry("release-a", "Apply", {"f:data": {"f:a": {}}})]
    assert not csa.release_fields_beyond_ours(shared, OURS, {OURS, "release-a"}, "v1")
    leftover = [entry(OURS, "Apply", {"f:data": {"f:a": {}}}), entry("release-a", "Apply", {"f:data": {"f:x": {}}})]
    assert csa.release_fields_beyond_ours(leftover, OURS, {"release-a"}, "v1")
    assert not csa.release_fields_beyond_ours(leftover, OURS, frozenset(), "v1")
    assert not csa.release_fields_beyond_ours(leftover, OURS, {"release-a"}, "v2")


# ----- what a take-over's apply removes (check mode's preview, issue 47) ------------------------


def test_release_removals_are_the_fields_only_the_release_managers_own():
    ports = {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}},
             'k:{"port":81,"protocol":"TCP"}': {".": {}, "f:port": {}}}
    helm = entry("helm", "Update", {"f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}},
                                                   "f:labels": {"f:app": {}, "f:only-helm": {}}},
                                    "f:spec": {"f:ports": ports}})
    ours = entry(OURS, "Apply", {"f:metadata": {"f:labels": {"f:app": {}}},
                                 "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}}})
    other = entry("kubectl-label", "Update", {"f:metadata": {"f:labels": {"f:team": {}}}})
    removed = csa.release_removals([helm, ours, other], OURS, {"helm"}, "v1")
    assert removed == [("f:metadata", "f:annotations", "f:meta.helm.sh/release-name"),
                       ("f:metadata", "f:labels", "f:only-helm"),
                       ("f:spec", "f:ports", 'k:{"port":81,"protocol":"TCP"}')]
    assert [csa.field_name(p) for p in removed] == [".metadata.annotations.meta.helm.sh/release-name",
                                                    ".metadata.labels.only-helm", '.spec.ports[port=81,protocol="TCP"]']
    assert csa.release_removals([ours, other], OURS, {"helm"}, "v1") == []


def test_without_fields_removes_map_keys_and_list_items_and_what_they_leave_empty():
    obj = {"metadata": {"name": "web", "annotations": {"meta.helm.sh/release-name": "shop"}, "labels": {"a": "1"}},
           "spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]}}
    paths = [("f:metadata", "f:annotations", "f:meta.helm.sh/release-name"),
             ("f:spec", "f:ports", 'k:{"port":81,"protocol":"TCP"}'), ("f:metadata", "f:labels", "f:missing")]
    out = csa.without_fields(obj, paths)
    assert out == {"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}}
    assert obj["metadata"]["annotations"]  # a copy: the object given is left as it is
    assert csa.value_at(out, paths[0]) != csa.value_at(obj, paths[0])
    assert csa.value_at(out, ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:port")) == 80
