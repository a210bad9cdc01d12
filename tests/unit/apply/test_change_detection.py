"""Did our apply change the object? (member_apply.apply_changed_nothing)"""

from __future__ import annotations

import copy

from applyset.apply.member_apply import apply_changed_nothing as _apply_changed_nothing

OURS = "applyset.kubernetes"


def job(rv="10", generation=1, time="2026-11-23T10:00:00Z", labels=None, status=True):
    obj = {"metadata": {"name": "migrate", "resourceVersion": rv, "generation": generation,
                        "labels": labels or {"app": "x"},
                        "managedFields": [{"manager": OURS, "operation": "Apply", "time": time,
                                           "fieldsV1": {"f:spec": {"f:template": {}}}},
                                          {"manager": "kube-controller-manager", "operation": "Update",
                                           "subresource": "status", "time": time}]}}
    if status:
        obj["status"] = {"active": 1}
    return obj


def test_the_same_resource_version_is_unchanged():
    assert _apply_changed_nothing(job(), job(), OURS)


def test_a_status_write_by_a_controller_between_list_and_apply_is_not_our_change():
    after = job(rv="12")
    after["metadata"]["managedFields"][1]["time"] = "2026-11-23T10:00:05Z"
    assert _apply_changed_nothing(job(), after, OURS)


def test_a_spec_label_or_ownership_change_is_a_change():
    assert not _apply_changed_nothing(job(), job(rv="12", generation=2), OURS)
    assert not _apply_changed_nothing(job(), job(rv="12", labels={"app": "y"}), OURS)
    assert not _apply_changed_nothing(job(), job(rv="12", time="2026-11-23T10:00:07Z"), OURS)


def test_without_status_or_generation_a_new_resource_version_is_a_change():
    assert not _apply_changed_nothing(job(status=False), job(rv="12", status=False), OURS)
    before = job()
    del before["metadata"]["generation"]
    assert not _apply_changed_nothing(before, copy.deepcopy(job(rv="12")), OURS)


def test_an_object_we_never_applied_before_is_judged_by_resource_version():
    before = job()
    before["metadata"]["managedFields"] = []
    assert not _apply_changed_nothing(before, job(rv="12"), OURS)
