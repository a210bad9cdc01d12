"""plan_digests: a plan as 11 characters per entry, what a fleet's preview publishes; the deploy
names each difference of its current plan from them, and counts the approved entries it cannot name.

Through the deploy role and ansible-runner: tests/integration/test_approved_plan_awx.py.
"""

import json

import pytest

from applyset.errors import InputError
from applyset.rules import plan_diff, plan_digests, plan_id as plans

SET = {"object": "ApplySet Secret shop/shop", "action": "apply", "id": "applyset-x-v1"}


def member(name, action="unchanged", body="b" * 16, **extra):
    return plans.entry(f"ConfigMap shop/{name}", action, body=body, **extra)


def plan(*members):
    return [SET, *members]


def test_each_entry_is_eleven_characters_and_the_order_does_not_matter():
    entries = plan(member("a"), member("b", "configure", start="s" * 16), plans.entry("ConfigMap shop/old", "prune", uid="u1"))
    text = plan_digests.tokens(entries)
    assert len(text) == 11 * len(entries) and text == plan_digests.tokens(list(reversed(entries)))
    assert plan_digests.differences(text, entries) == []


def test_every_difference_the_current_plan_can_name_is_named():
    approved = plan(member("kept"), member("deleted"), member("edited", "configure", start="s" * 16),
                    member("body", "configure", body="1" * 16), plans.entry("ConfigMap shop/gone", "prune", uid="u"))
    now = plan(member("kept"), member("deleted", "create"), member("edited", "unchanged"),
               member("body", "configure", body="2" * 16), member("new", "create"))
    lines = plan_digests.differences(plan_digests.tokens(approved), now)
    assert lines == [
        "ConfigMap shop/body: approved configure, now configure (another body, UID, start, values or order): it was "
        "changed in the manifests or on the cluster since",
        "ConfigMap shop/deleted: approved unchanged, now create: it was deleted on the cluster since",
        "ConfigMap shop/edited: approved configure, now unchanged: the cluster already holds what the plan sends "
        "(someone applied it since)",
        "ConfigMap shop/new: approved nothing, now create: it is new in the manifests",
        "1 object(s) approved to prune are not in the plan now (deleted on the cluster, or removed from the manifests, "
        "since; the published digests do not name them)",
    ]


def test_approved_plan_takes_published_digests_and_a_whole_plan_as_before():
    entries = plan(member("a"), member("b", "create"))
    plan_id = plans.digest(entries)
    published = plan_digests.published(plan_id, entries)
    approved = plan_diff.parse_approved(published)
    assert approved.plan_id == plan_id and approved.digests == published["digests"] and approved.plan is None
    assert plan_diff.parse_approved({"plan_id": plan_id, "plan": entries}).plan == entries  # as before
    with pytest.raises(InputError, match="not plan digests"):
        plan_diff.parse_approved(dict(published, digests=published["digests"][:-1]))
    with pytest.raises(InputError, match="no plan_id"):
        plan_diff.parse_approved({"digests": published["digests"]})


def test_a_fleet_of_100_clusters_with_1000_members_publishes_about_a_megabyte_not_nine():
    entries = plan(*[member(f"cm-{i:04d}", body=f"{i:016d}") for i in range(1000)])
    plan_id = plans.digest(entries)
    whole = {f"cluster-{c:03d}/shop/shop": {"plan_id": plan_id, "plan": entries} for c in range(100)}
    small = {f"cluster-{c:03d}/shop/shop": plan_digests.published(plan_id, entries) for c in range(100)}
    assert len(json.dumps(small)) < 1_200_000 < 8_000_000 < len(json.dumps(whole))
