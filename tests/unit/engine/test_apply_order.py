"""The order of an apply through the engine (fakeapi.py): members in phases with barriers only where
needed, a failed member stopping what depends on it, and CRDs before their custom resources."""

from fakeapi import actions, cm, deploy, first_index, load, make_engine, outcome, run
from engine_objects import svc, crd


# ----- apply order: phases -------------------------------------------------------------------


def event(name):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "reason": "Test"}


def applied_batches(monkeypatch, eng):
    """Record each client.map call of the member applies as the list of refs it was given."""
    batches, real_map = [], eng.client.map

    def recording_map(func, items):
        items = list(items)
        if items and hasattr(items[0], "ref"):
            batches.append([m.ref for m in items])
        return real_map(func, items)

    monkeypatch.setattr(eng.client, "map", recording_map)
    return batches


def test_members_are_applied_in_phases_with_barriers_only_where_needed(api, monkeypatch):
    eng = make_engine(api, parallelism=4)
    batches = applied_batches(monkeypatch, eng)
    manifests = load(event("e1"), deploy("web"), svc("front"), cm("a"),
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "more"}},
                     crd("widgets", "Widget"), cm("b"))
    report, error = outcome(eng, "apply", manifests)
    assert error is None
    assert batches == [["CustomResourceDefinition widgets.example.com"], ["Namespace more"],
                       ["ConfigMap shop/a", "ConfigMap shop/b", "Service shop/front"],
                       ["Deployment shop/web", "Event shop/e1"]]
    # The report keeps rank order, then input order, whatever the parallelism.
    assert [o.ref for o in report.objects] == [
        "CustomResourceDefinition widgets.example.com", "Namespace more", "ConfigMap shop/a", "ConfigMap shop/b",
        "Service shop/front", "Deployment shop/web", "Event shop/e1"]


def test_a_failed_configuration_member_stops_the_workloads_but_not_its_own_phase(api):
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 422, "a is invalid", reason="Invalid", times=None)
    report, error = run(api, "apply", load(deploy("web"), event("e1"), cm("a"), svc("front")))
    assert error is not None and "ConfigMap shop/a: a is invalid" in str(error)
    assert actions(report) == {"ConfigMap shop/a": "failed", "Service shop/front": "created",
                               "Deployment shop/web": "skipped", "Event shop/e1": "skipped"}
    assert [o.ref for o in report.objects][2:] == ["Deployment shop/web", "Event shop/e1"]  # plan order
    assert all(o.reason.startswith("not tried: an earlier member failed") for o in report.objects[2:])
    assert report.summary()["skipped"] == 2 and sum(report.summary().values()) == 4
    assert not any(r.is_write and ("/deployments/" in r.path or "/events/" in r.path) for r in api.requests)
    assert api.object("apps/v1", "Deployment", "web", "shop") is None


def test_a_failed_workload_does_not_stop_what_goes_with_it(api):
    # An HPA, PDB, Ingress or custom resource names its target and does not need it to exist.
    api.fail("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web", 422, "web is invalid", reason="Invalid",
             times=None)
    report, error = run(api, "apply", load(event("e1"), deploy("web"), cm("a")))
    assert error is not None and "nothing was pruned" in str(error)
    assert actions(report) == {"ConfigMap shop/a": "created", "Deployment shop/web": "failed",
                               "Event shop/e1": "created"}

# ----- CRDs and their custom resources -------------------------------------------------------


def test_a_crd_and_its_custom_resources_in_one_run(api):
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget, cm("a")))
    assert error is None
    assert actions(report) == {"CustomResourceDefinition widgets.example.com": "created",
                               "ConfigMap shop/a": "created", "Widget shop/w1": "created"}
    crd_write = first_index(api, lambda r: r.is_write and "customresourcedefinitions" in r.path)
    widget_write = first_index(api, lambda r: r.is_write and "/widgets/" in r.path)
    assert crd_write < widget_write
    # The CRD is read back (its Established wait) before its first custom resource is sent.
    crd_read = first_index(api, lambda r: r.method == "GET"
                           and r.path.endswith("/customresourcedefinitions/widgets.example.com"))
    assert crd_write < crd_read < widget_write
    assert api.object("example.com/v1", "Widget", "w1", "shop") is not None


def test_a_crd_that_never_gets_established_stops_before_its_resources(api):
    api.establish_crds = False
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget), crd_timeout=0)
    assert error is not None and "not Established" in str(error)
    assert not any(r.is_write and "/widgets/" in r.path for r in api.requests)


def test_a_crd_whose_names_are_refused_stops_the_run(api):
    api.establish_crds = False

    def names_refused(_request):
        api.update("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", None,
                   lambda o: o.__setitem__("status", {"conditions": [
                       {"type": "NamesAccepted", "status": "False", "reason": "PluralConflict",
                        "message": "plural widgets is already in use"}]}))

    api.before("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", names_refused)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget))
    assert error is not None and "will not become Established" in str(error)
    assert "names not accepted: PluralConflict: plural widgets is already in use" in str(error)
    assert not any(r.is_write and "/widgets/" in r.path for r in api.requests)


def test_custom_resources_wait_until_their_new_crd_is_served(api):
    api.fail("PATCH", "/apis/example.com/v1/namespaces/shop/widgets/w1", 404, "the server could not find the "
             "requested resource", reason="NotFound")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget))
    assert error is None and actions(report)["Widget shop/w1"] == "created"
    assert [r.status for r in api.sent("PATCH", "/apis/example.com/v1/namespaces/shop/widgets/w1")] == [404, 201]
