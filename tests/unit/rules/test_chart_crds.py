"""rules.chart_crds: a chart's crds/ CRDs told apart by their source, and what each policy does (pure)."""

from applyset.inputs.manifests import load_definition
from applyset.kube.discovery import Resource
from applyset.rules import chart_crds, prune

CRD = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {name}\n"
RENDERED = [
    "# Source: shop/crds/widgets.yaml\n" + CRD.format(name="widgets.shop.example.com"),
    "# Source: shop/charts/db/crds/backups.yaml\n" + CRD.format(name="backups.db.example.com"),
    "# Source: shop/templates/crds/made.yaml\n" + CRD.format(name="made.shop.example.com"),
    "# Source: shop/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
]


def test_crds_of_the_chart_and_its_subcharts_crds_directories_are_split_out_in_order():
    crds, rest = chart_crds.split(load_definition(RENDERED))
    assert [m.name for m in crds] == ["widgets.shop.example.com", "backups.db.example.com"]
    # A CRD a template renders is an ordinary member, as with helm install.
    assert [m.name for m in rest] == ["made.shop.example.com", "cm"]


def live(name, manager="helm", part_of=None, uid="u1"):
    labels = {"applyset.kubernetes.io/part-of": part_of} if part_of else {}
    return {"metadata": {"name": name, "uid": uid, "labels": labels, "managedFields": [{"manager": manager}]}}


def test_each_policy_creates_replaces_or_leaves_and_names_adoptions():
    crds, _rest = chart_crds.split(load_definition(RENDERED))
    widgets, backups = (m.name for m in crds)
    found = {widgets: None, backups: live(backups)}
    create = chart_crds.decide(crds, found, chart_crds.CREATE, set_id="applyset-x", field_manager="applyset.kubernetes")
    assert ([m.name for m in create.to_apply], create.left, create.adopted) == ([widgets], (backups,), ())
    replace = chart_crds.decide(crds, found, chart_crds.CREATE_REPLACE, set_id="applyset-x",
                                field_manager="applyset.kubernetes")
    assert [m.name for m in replace.to_apply] == [widgets, backups] and replace.adopted == (backups,)
    assert backups in chart_crds.adoption_warning(replace, "./shop")
    ours = chart_crds.decide(crds, {widgets: None, backups: live(backups, "applyset.kubernetes")},
                             chart_crds.CREATE_REPLACE, set_id="applyset-x", field_manager="applyset.kubernetes")
    assert ours.adopted == () and chart_crds.adoption_warning(ours, "./shop") is None
    skip = chart_crds.decide(crds, found, chart_crds.SKIP, set_id="applyset-x", field_manager="applyset.kubernetes")
    assert skip.to_apply == [] and skip.report() == {"policy": "Skip", "created": [], "replaced": [], "left": [],
                                                     "adopted": []}


def test_a_crd_an_earlier_run_made_a_member_is_released_and_kept_never_pruned():
    crds, _rest = chart_crds.split(load_definition(RENDERED))
    found = {crds[0].name: live(crds[0].name, part_of="applyset-x", uid="crd-uid")}
    decided = chart_crds.decide(crds, found, chart_crds.CREATE, set_id="applyset-x", field_manager="m")
    assert decided.released == frozenset({"crd-uid"})
    res = Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)
    context = prune.Context(applyset_id="applyset-x", parent_uid=None,
                            scope=prune.scope_of({res.group_kind}, set()), released_uids=decided.released)
    decision = prune.decide(res, found[crds[0].name]["metadata"], context)
    assert (decision.verdict, decision.rule) == (prune.KEEP, "released_chart_crd")
