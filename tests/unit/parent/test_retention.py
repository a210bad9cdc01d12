"""When a recorded kind may leave the hint (retention.py): only when it provably holds nothing."""

from __future__ import annotations

from applyset.parent import retention
from applyset.errors import ApiError
from applyset.spec import GroupKind

WIDGET = GroupKind("example.com", "Widget")


def crd(kind="Widget", group="example.com", plural="widgets", served=(True,), deleting=False):
    meta = {"name": f"{plural}.{group}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    return {"metadata": meta, "spec": {"group": group, "names": {"kind": kind, "plural": plural,
                                                                 "singular": kind.lower(), "shortNames": ["wd"]},
                                       "versions": [{"name": f"v{i}", "served": s} for i, s in enumerate(served)]}}


def apiservice(group, version="v1", service=None, automanaged=None, available=True):
    labels = {retention.AUTOMANAGED_LABEL: automanaged} if automanaged else {}
    return {"metadata": {"name": f"{version}.{group}", "labels": labels},
            "spec": {"group": group, "version": version, "service": service},
            "status": {"conditions": [{"type": "Available", "status": "True" if available else "False",
                                       "reason": "Passed" if available else "FailedDiscoveryCheck"}]}}


BUILT_IN = [apiservice("", automanaged="onstart"), apiservice("apps", automanaged="onstart")]


def defs(crds=(), apiservices=BUILT_IN):
    return retention.ApiDefinitions(list(crds), list(apiservices))


def test_a_crd_with_no_served_version_keeps_its_kind():
    reason = retention.why_it_may_hold_objects(WIDGET, defs([crd(served=(False,))]))
    assert reason == "its CustomResourceDefinition widgets.example.com exists but serves no version"


def test_a_crd_being_deleted_keeps_its_kind():
    reason = retention.why_it_may_hold_objects(WIDGET, defs([crd(deleting=True)]))
    assert "is being deleted" in reason


def test_a_deleted_crd_drops_its_kind_even_with_its_groups_automanaged_apiservice():
    gone = defs([crd(kind="Gadget", plural="gadgets")],
                BUILT_IN + [apiservice("example.com", automanaged="true")])
    assert retention.why_it_may_hold_objects(WIDGET, gone) is None


def test_an_aggregated_apiservice_that_is_down_keeps_its_group():
    down = defs(apiservices=BUILT_IN + [apiservice("metrics.k8s.io", "v1beta1",
                                                   service={"name": "metrics-server"}, available=False)])
    reason = retention.why_it_may_hold_objects(GroupKind("metrics.k8s.io", "PodMetrics"), down)
    assert reason == "APIService v1beta1.metrics.k8s.io serves its group (not available: FailedDiscoveryCheck)"


def test_built_in_groups_are_kept():
    assert "core API group" in retention.why_it_may_hold_objects(GroupKind("", "Nope"), defs())
    assert "served by the API server itself" in retention.why_it_may_hold_objects(GroupKind("apps", "Nope"), defs())


def test_nothing_provable_without_the_lists():
    no_crds = retention.ApiDefinitions(None, [], crd_error="forbidden")
    assert "could not be listed" in retention.why_it_may_hold_objects(WIDGET, no_crds)
    no_services = retention.ApiDefinitions([], None, apiservice_error="forbidden")
    assert "APIServices could not be listed" in retention.why_it_may_hold_objects(WIDGET, no_services)


def test_legacy_resource_entries_are_found_by_plural_singular_or_short_name():
    definitions = defs([crd(served=(False,))])
    for name in ("widgets", "widget", "wd", "Widgets"):
        assert definitions.crd_for_resource("example.com", name) is not None
        assert retention.why_resource_may_hold_objects("example.com", name, definitions)
    assert retention.why_resource_may_hold_objects("example.com", "gadgets", definitions) is None


class ListingClient:
    def __init__(self, objects, forbidden=()):
        self.objects, self.forbidden, self.calls = objects, forbidden, []

    def list(self, res, namespace=None, *, metadata_only=True, **_):
        self.calls.append((res.plural, metadata_only))
        if res.plural in self.forbidden:
            raise ApiError("forbidden", status=403)
        yield from self.objects.get(res.plural, [])


def test_load_reads_whole_objects_and_keeps_errors():
    client = ListingClient({"customresourcedefinitions": [crd()]}, forbidden={"apiservices"})
    loaded = retention.load(client)
    assert loaded.crds == [crd()] and loaded.apiservices is None and loaded.apiservice_error == "forbidden"
    assert client.calls == [("customresourcedefinitions", False), ("apiservices", False)]
