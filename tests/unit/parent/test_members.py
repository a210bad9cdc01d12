"""The parent's record of its members (parent/members.py): short digests, bounded by the annotation
limit, and what a release records after a run that went through or failed."""

from __future__ import annotations

from types import SimpleNamespace

from applyset import spec
from applyset.parent import members


def test_the_parent_records_its_members_as_short_digests():
    key = spec.ObjectId("", "ConfigMap", "shop", "a")
    other = spec.ObjectId("", "ConfigMap", "shop", "b")
    record = members.format_record({members.digest(key), members.digest(other)})
    parsed = members.parse({"metadata": {"annotations": {members.ANNOTATION_MEMBERS: record}}})
    assert len(record) == 21 and "shop" not in record  # names are not shown
    assert members.recorded(parsed, key) and not members.recorded(parsed, spec.ObjectId("", "ConfigMap", "shop", "c"))
    assert members.parse({"metadata": {}}) is None


def test_a_set_too_large_for_the_annotation_limit_keeps_no_member_record():
    """All annotations of one object share 256 KiB: a record for 25,000 members (275 KB) would make
    every parent write fail, so a set above members.MAX_RECORDED records none."""

    def plan_of(n):
        return SimpleNamespace(members=[SimpleNamespace(key=spec.ObjectId("", "ConfigMap", "big", f"cm-{i}"))
                                        for i in range(n)])
    parent = SimpleNamespace(member_record=None, record_members=None)
    members.while_writing(parent, plan_of(members.MAX_RECORDED))
    assert len(parent.record_members) == members.MAX_RECORDED
    assert len(members.format_record(parent.record_members)) < 100 * 1024
    members.while_writing(parent, plan_of(members.MAX_RECORDED + 1))
    assert parent.record_members is None
    assert members.at_release(parent.member_record, plan_of(25000), [], done=True) is None


def test_a_failed_run_records_the_old_members_and_those_it_applied_only():
    """A member the server refused was never created: recording it would show it missing, not new."""
    old, applied, refused = (spec.ObjectId("", "ConfigMap", "ns", name) for name in ("old", "applied", "refused"))
    parent = SimpleNamespace(member_record=frozenset({members.digest(old)}), record_members=None)
    plan = SimpleNamespace(members=[SimpleNamespace(key=k) for k in (applied, refused)])
    report = SimpleNamespace(objects=[SimpleNamespace(id=applied, action="created"),
                                      SimpleNamespace(id=refused, action="failed")])
    recorded = members.at_release(parent.member_record, plan, report.objects, done=False)
    assert recorded == {members.digest(old), members.digest(applied)}
