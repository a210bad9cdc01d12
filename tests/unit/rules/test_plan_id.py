"""The plan id (rules/plan_id.py) and the differences of an approved plan (rules/plan_diff.py)."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from applyset import spec
from applyset.errors import InputError
from applyset.rules import nochange, plan_diff
from applyset.rules import plan_id as plans

WEB = spec.ObjectId("apps", "Deployment", "shop", "web")
BANNER = spec.ObjectId("", "ConfigMap", "shop", "banner")


def body(v="1", **meta):
    return nochange.with_digest({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "banner", "namespace": "shop", **meta}, "data": {"v": v}})


def a_plan():
    return [plans.entry("ApplySet Secret shop/shop", plans.SET_APPLY, id="applyset-abc-v1"),
            plans.entry(plans.ref_of(BANNER), plans.CONFIGURE, body=plans.body_digest(body())),
            plans.entry(plans.ref_of(WEB), plans.UNCHANGED, body="AAAA", after=["ConfigMap shop/banner"]),
            plans.entry("ConfigMap shop/old", plans.PRUNE, uid="u-1"),
            plans.entry("Job.batch shop/migrate", plans.RUN_HOOK, phase="pre-apply", body="BBBB", weight=-5)]


def test_the_id_is_versioned_and_short():
    pid = plans.digest(a_plan())
    prefix, _, digits = pid.partition(":")
    assert prefix == "plan-v1" and len(digits) == 24 and int(digits, 16) >= 0


def test_the_id_does_not_depend_on_the_order_of_entries_or_of_keys():
    entries = a_plan()
    ids = set()
    for seed in range(20):
        shuffled = [dict(reversed(list(e.items()))) for e in entries]
        random.Random(seed).shuffle(shuffled)
        ids.add(plans.digest(shuffled))
    assert ids == {plans.digest(entries)}
    assert plans.canonical(list(reversed(entries)))[0]["action"] == plans.SET_APPLY


def test_the_id_is_the_same_on_another_python_process():
    """No hash() of str, no set order: a process with another hash seed computes the same id."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from applyset.rules import plan_id as p; "
            "print(p.digest([p.entry('ConfigMap shop/a', 'create', body='x'), p.entry('S s/s', 'apply', id='i')]))")
    root = str(Path(plans.__file__).resolve().parents[2])
    outputs = {subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": str(seed)}).stdout.strip() for seed in (1, 2)}
    assert outputs == {plans.digest([plans.entry("S s/s", "apply", id="i"),
                                     plans.entry("ConfigMap shop/a", "create", body="x")])}


def test_what_is_not_sent_does_not_change_the_body_digest():
    sent = body()
    live_like = dict(sent, status={"phase": "x"})
    live_like["metadata"] = dict(sent["metadata"], resourceVersion="9", creationTimestamp="2026-01-01T00:00:00Z")
    assert plans.body_digest(sent) == plans.body_digest(body())
    assert plans.body_digest(body(v="2")) != plans.body_digest(sent)
    # The digest is the applied-digest annotation's, which the rules of ignore_fields already set.
    assert plans.body_digest(sent) == sent["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST][3:19]


def test_each_field_of_an_entry_changes_the_id_and_an_empty_field_is_left_out():
    base = plans.digest(a_plan())
    for index, name, value in [(1, "action", plans.CREATE), (1, "body", "other"), (3, "uid", "u-2"),
                               (2, "after", []), (4, "weight", 0), (0, "id", "applyset-other-v1")]:
        changed = a_plan()
        changed[index] = dict(changed[index], **{name: value})
        if value == []:
            changed[index] = plans.entry(changed[index]["object"], changed[index]["action"],
                                         **{k: v for k, v in changed[index].items() if k not in ("object", "action")})
        assert plans.digest(changed) != base, name
    assert plans.entry("X a", "create", uid=None, after=[]) == {"object": "X a", "action": "create"}


def test_objects_are_named_with_their_group():
    assert plans.ref_of(WEB) == "Deployment.apps shop/web"
    assert plans.ref_of(spec.ObjectId("", "Namespace", "", "shop")) == "Namespace shop"


@pytest.mark.parametrize("given", ["plan", "dict", "id", "result"])
def test_approved_plan_in_each_shape(given):
    plan = a_plan()
    pid = plans.digest(plan)
    value = {"plan": plan, "id": pid, "dict": {"plan_id": pid, "plan": plan},
             "result": {"changed": True, "plan_id": pid, "plan": plan, "objects": []}}[given]
    approved = plan_diff.parse_approved(value)
    assert approved.plan_id == pid
    assert approved.plan == (None if given == "id" else plan)


@pytest.mark.parametrize("value", ["", "sha256:abc", 3, [{"object": "x"}], {"plan_id": "plan-v1:0", "plan": []}])
def test_a_bad_approved_plan_is_refused_naming_the_option(value):
    with pytest.raises(InputError) as err:
        plan_diff.parse_approved(value)
    assert err.value.obj == "approved_plan" and err.value.fix


def test_each_difference_is_named_with_why():
    approved = a_plan()
    now = a_plan()
    now[1] = dict(now[1], action=plans.CREATE)  # deleted on the cluster
    now[2] = dict(now[2], action=plans.CONFIGURE)  # someone changed a field we send
    now[3] = dict(now[3], uid="u-2")  # prune target recreated
    del now[4]  # the hook left the manifests
    now.append(plans.entry("ConfigMap shop/new", plans.CREATE, body="CCCC"))
    assert plan_diff.differences(approved, now) == [
        "ConfigMap shop/banner: approved configure, now create: it was deleted on the cluster since",
        "ConfigMap shop/new: approved nothing, now create: it is new in the manifests",
        "ConfigMap shop/old: approved prune (uid=u-1), now prune (uid=u-2): "
        "it was recreated on the cluster with a new UID since",
        "Deployment.apps shop/web: approved unchanged, now configure: "
        "it was changed on the cluster since, in a field the plan sends",
        "Job.batch shop/migrate: approved run-hook pre-apply, now nothing: "
        "it was removed from the manifests since, or no member changes any more",
    ]
    assert plan_diff.differences(approved, list(reversed(a_plan()))) == []


def test_the_digest_of_a_thousand_members_is_cheap():
    """The cost the issue asks for: entries and id of a 1,000-member plan (bodies already digested
    by the plan step, as in a run)."""
    bodies = [body(v=str(i)) for i in range(1000)]
    started = time.perf_counter()
    entries = [plans.entry(f"ConfigMap shop/cm-{i}", plans.UNCHANGED, body=plans.body_digest(b))
               for i, b in enumerate(bodies)]
    plans.digest(entries)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, elapsed


def test_a_known_plan_has_a_known_id_on_every_python():
    """The id is pinned: the same plan gives this id on every supported Python (``make matrix``
    runs this test on each), and a change of what is digested needs a new PLAN_VERSION."""
    plan = [plans.entry("ApplySet Secret shop/shop", plans.SET_APPLY, id="applyset-abc-v1"),
            plans.entry("ConfigMap shop/é", plans.CREATE, body="x", wave=-1, after=["Job.batch shop/m"]),
            plans.entry("ConfigMap shop/old", plans.PRUNE, uid="u-1")]
    assert plans.digest(plan) == "plan-v1:7bb9160019d8599a9afdea01"


@pytest.mark.parametrize("value", ["plan-v1:7bb9160019d8599a9afdea0", "plan-v1:7bb9160019d8599a9afdea01 ",
                                   "plan-v1:7BB9160019D8599A9AFDEA01", "plan-v1:", "plan-vX:abc", "plan-v1:xyz"])
def test_a_malformed_plan_id_is_refused_before_it_is_compared(value):
    with pytest.raises(InputError) as err:
        plan_diff.parse_approved(value)
    assert err.value.obj == "approved_plan" and "is not a plan id" in err.value.message
    assert plan_diff.parse_approved({"plan_id": "plan-v1:7bb9160019d8599a9afdea01"}).plan_id.endswith("01")
    assert plan_diff.parse_approved("plan-v0:abc").plan_id == "plan-v0:abc"  # another version's: named, not refused
