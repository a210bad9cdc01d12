"""Known-answer and format tests for the ApplySet keys, ID and hint annotations."""

from pathlib import Path

import pytest
import yaml

import fakeapi
from applyset.parent import resolve as parent_resolve
from applyset import spec
from applyset.errors import InputError
from applyset.inputs.manifests import load_definition
from applyset.spec import GroupKind, GroupResource

GALAXY_YML = Path(__file__).resolve().parents[2] / "galaxy.yml"


# Known-answer vectors from kubectl's own tests (k8s.io/kubectl v0.34.4):
# - my-set/test Secret: pkg/cmd/apply/apply_test.go (TestApplySetParentManagement);
# - simple/test Secret: pkg/cmd/apply/testdata/prune/simple/manifest1-expected-getobjects.yaml;
# - my-set ApplySet.company.com (cluster-scoped): testdata/apply/applyset-cr.yaml and apply_test.go
#   (TestApplySet_ClusterScopedCustomResourceParent);
# - my-set/test ConfigMap: computed with the same formula (kubectl has no fixture for it);
# - cross_namespace Secret: the fixture of kubernetes/kubernetes#132527 (not merged).
@pytest.mark.parametrize("name, namespace, kind, group, expected", [
    ("my-set", "test", "Secret", "", "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1"),
    ("simple", "test", "Secret", "", "applyset-bjd1LnyQq0mtUu-riZCqjDQOmh0iNb9O2RcuT12WR0k-v1"),
    ("my-set", "", "ApplySet", "company.com",
     "applyset-rhp1a-HVAVT_dFgyEygyA1BEB82HPp2o10UiFTpqtAs-v1"),
    ("my-set", "test", "ConfigMap", "", "applyset-gixR4KUFBNRxOPyC-scYMHmBW0ziohNNkE_oCmTLycQ-v1"),
    ("cross_namespace", "applyset-namespace", "Secret", "",
     "applyset-maUyxm9hLztJjNIswOCgA-VT6EJxr1_CcWA5kSzuMYE-v1"),
])
def test_compute_id_known_answers(name, namespace, kind, group, expected):
    assert spec.compute_id(name, namespace, kind, group) == expected


def test_compute_id_fits_a_label_value():
    applyset_id = spec.compute_id("x" * 253, "y" * 63, "SomeVeryLongKind", "example.com")
    assert len(applyset_id) == 55
    assert "=" not in applyset_id and "+" not in applyset_id and "/" not in applyset_id


def test_compute_id_treats_none_as_empty():
    assert spec.compute_id("my-set", None, "ApplySet", "company.com") == \
        spec.compute_id("my-set", "", "ApplySet", "company.com")


def test_what_is_written_uses_the_kubectl_keys():
    """The keys as they go on the wire (parent and members), spelled as KEP-3659 and kubectl do."""
    api = fakeapi.FakeApi()
    api.add_namespace("shop")
    member = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    report, error = fakeapi.outcome(fakeapi.make_engine(api, parent="secrets/shop"), "apply",
                                    load_definition([member]))
    assert error is None
    parent = api.object("v1", "Secret", "shop", "shop")["metadata"]
    assert list(parent["labels"]) == ["applyset.kubernetes.io/id"]
    # plus our own record of the members (members.py), under our own prefix
    assert sorted(parent["annotations"]) == ["applyset.kubernetes.ansible/members",
                                             "applyset.kubernetes.io/additional-namespaces",
                                             "applyset.kubernetes.io/contains-group-kinds",
                                             "applyset.kubernetes.io/tooling"]
    assert list(api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"]) == [
        "applyset.kubernetes.io/part-of"]


def test_the_keep_annotation_and_the_parent_type_label_are_read_by_their_names():
    assert spec.keep_reason({"applyset.kubernetes.ansible/prune": "disabled"}) == \
        "annotation applyset.kubernetes.ansible/prune=disabled"
    api = fakeapi.FakeApi()
    api.kinds.append(fakeapi.Kind("example.com", "v1", "Set", "sets", False))
    api.add({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": "sets.example.com", "labels": {"applyset.kubernetes.io/is-parent-type": "true"}},
             "spec": {"group": "example.com", "names": {"plural": "sets", "kind": "Set"}, "scope": "Cluster",
                      "versions": [{"name": "v1"}]}})
    res = fakeapi.client(api).discover().for_resource("example.com", "sets")
    assert parent_resolve.check_kind_allowed(fakeapi.client(api), res) is None


def test_tooling_and_field_manager():
    assert spec.tooling_value() == "applyset.kubernetes/0.1.0"
    assert spec.tooling_value("1.2.3") == "applyset.kubernetes/1.2.3"
    assert spec.PARENT_FIELD_MANAGER == "applyset.kubernetes-applyset"
    assert spec.tooling_name(spec.tooling_value()) == spec.TOOL_NAME


@pytest.mark.skipif(not GALAXY_YML.exists(), reason="galaxy.yml not present")
def test_collection_version_matches_galaxy_yml():
    galaxy = yaml.safe_load(GALAXY_YML.read_text(encoding="utf-8"))
    assert spec.COLLECTION_VERSION == str(galaxy["version"])
    assert spec.TOOL_NAME == f"{galaxy['namespace']}.{galaxy['name']}"


# tooling values as kubectl writes and parses them (pkg/cmd/apply/applyset.go, ApplySetTooling and toolingBaseName)
@pytest.mark.parametrize("value, name", [
    ("kubectl/v1.30.1", "kubectl"),
    ("kubectl/v0.0.0-master+$Format:%H$", "kubectl"),
    ("helm/v3", "helm"),
    ("helm", "helm"),
    ("example.com/tool/why/v1", "example.com/tool/why"),
    ("applyset.kubernetes/0.1.0", "applyset.kubernetes"),
    ("kubectl/", "kubectl"),
    ("", ""),
])
def test_tooling_name(value, name):
    assert spec.tooling_name(value) == name


class TestGroupKind:
    def test_str_like_go(self):
        assert str(GroupKind("", "Secret")) == "Secret"
        assert str(GroupKind("apps", "Deployment")) == "Deployment.apps"
        assert str(GroupKind("company.com", "ApplySet")) == "ApplySet.company.com"

    def test_parse_splits_at_first_dot(self):
        assert GroupKind.parse("Secret") == GroupKind("", "Secret")
        assert GroupKind.parse("Deployment.apps") == GroupKind("apps", "Deployment")
        assert GroupKind.parse("ApplySet.company.com") == GroupKind("company.com", "ApplySet")

    def test_fields(self):
        group_kind = GroupKind("apps", "Deployment")
        assert (group_kind.group, group_kind.kind) == ("apps", "Deployment")


class TestGroupKindsAnnotation:
    def test_format_examples_from_kubectl_tests(self):
        assert spec.format_group_kinds([GroupKind("", "ReplicationController")]) == \
            "ReplicationController"
        assert spec.format_group_kinds(
            [GroupKind("", "Service"), GroupKind("", "ReplicationController")]) == \
            "ReplicationController,Service"
        assert spec.format_group_kinds(
            [GroupKind("", "Secret"), GroupKind("", "Namespace"), GroupKind("apps", "Deployment")]
        ) == "Deployment.apps,Namespace,Secret"

    def test_format_sorts_byte_wise_and_deduplicates(self):
        kinds = [GroupKind("", "pod"), GroupKind("apps", "Deployment"), GroupKind("", "Zebra"),
                 GroupKind("apps", "Deployment"), GroupKind("", "Deployment")]
        # Uppercase sorts before lowercase; "Deployment" < "Deployment.apps".
        assert spec.format_group_kinds(kinds) == "Deployment,Deployment.apps,Zebra,pod"

    def test_format_empty(self):
        assert spec.format_group_kinds([]) == ""

    def test_round_trip(self):
        kinds = {GroupKind("", "Secret"), GroupKind("company.com", "ApplySet")}
        assert spec.parse_group_kinds(spec.format_group_kinds(kinds)) == kinds

    @pytest.mark.parametrize("text, expected", [
        (None, set()),
        ("", set()),
        ("ReplicationController", {GroupKind("", "ReplicationController")}),
        ("Deployment.apps,Namespace,Secret",
         {GroupKind("apps", "Deployment"), GroupKind("", "Namespace"), GroupKind("", "Secret")}),
        (" Deployment.apps , Secret ,, ", {GroupKind("apps", "Deployment"), GroupKind("", "Secret")}),
    ])
    def test_parse(self, text, expected):
        assert spec.parse_group_kinds(text) == expected


@pytest.mark.parametrize("text, expected", [
    (None, set()),
    ("", set()),
    ("replicationcontrollers", {("", "replicationcontrollers")}),
    ("replicationcontrollers,services", {("", "replicationcontrollers"), ("", "services")}),
    ("deployments.apps, applysets.company.com",
     {("apps", "deployments"), ("company.com", "applysets")}),
])
def test_parse_group_resources(text, expected):
    parsed = spec.parse_group_resources(text)
    assert parsed == expected
    assert all(isinstance(entry, GroupResource) for entry in parsed)


class TestNamespacesAnnotation:
    def test_format_drops_parent_namespace_and_sorts(self):
        assert spec.format_namespaces({"test", "default", "shop"}, "shop") == "default,test"

    def test_format_namespaced_parent_alone_is_empty(self):
        assert spec.format_namespaces({"shop"}, "shop") == ""
        assert spec.format_namespaces([], "shop") == ""

    def test_format_cluster_scoped_parent(self):
        assert spec.format_namespaces(["test", "", None, "b", "test"], "") == "b,test"
        assert spec.format_namespaces(["test"], None) == "test"

    @pytest.mark.parametrize("text, expected", [
        (None, set()), ("", set()), ("test", {"test"}), ("default,test", {"default", "test"}),
        ("a, b,,", {"a", "b"}),
    ])
    def test_parse(self, text, expected):
        assert spec.parse_namespaces(text) == expected


class TestParentRef:
    # kubectl's pkg/cmd/apply/apply_test.go (TestApplySetParentValidation)
    @pytest.mark.parametrize("text, expected", [
        ("mysecret", ("secrets", "", "mysecret")),
        ("secret/thename", ("secret", "", "thename")),
        ("secrets/thename", ("secrets", "", "thename")),
        ("configmap/thename", ("configmap", "", "thename")),
        ("deployments.apps/thename", ("deployments", "apps", "thename")),
        ("applysets.company.com/my-set", ("applysets", "company.com", "my-set")),
        ("namespaces/thename", ("namespaces", "", "thename")),
        ("doesnotexist/thename", ("doesnotexist", "", "thename")),
        # A version is not part of the syntax: it lands in the group, as in kubectl.
        ("deployments.v1.apps/x", ("deployments", "v1.apps", "x")),
    ])
    def test_parse(self, text, expected):
        assert spec.parse_parent_ref(text) == expected

    def test_blank_name_has_kubectl_message(self):
        with pytest.raises(InputError) as raised:
            spec.parse_parent_ref("secret/")
        assert raised.value.message == 'invalid parent reference "secret/": name cannot be blank'
        assert raised.value.fix

    @pytest.mark.parametrize("text, problem", [
        ("", "name cannot be blank"),
        ("/my-set", "resource cannot be blank"),
        ("secrets/a/b", 'name "a/b" contains "/"'),
    ])
    def test_other_invalid_references(self, text, problem):
        with pytest.raises(InputError) as raised:
            spec.parse_parent_ref(text)
        assert raised.value.message == f'invalid parent reference "{text}": {problem}'

    def test_ref_id_and_text(self):
        parent = spec.ParentRef(group="", version="v1", kind="Secret", resource="secrets",
                                name="my-set", namespace="test")
        assert parent.applyset_id() == "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1"
        assert parent.group_kind == GroupKind("", "Secret")
        assert parent.api_version == "v1"
        assert str(parent) == "Secret test/my-set"

    def test_cluster_scoped_custom_resource(self):
        parent = spec.ParentRef(group="company.com", version="v1", kind="ApplySet",
                                resource="applysets", name="my-set")
        assert parent.namespace == ""
        assert parent.api_version == "company.com/v1"
        assert parent.applyset_id() == "applyset-rhp1a-HVAVT_dFgyEygyA1BEB82HPp2o10UiFTpqtAs-v1"
        assert str(parent) == "ApplySet.company.com my-set"

    def test_unresolved_ref(self):
        parent = spec.ParentRef(group="company.com", resource="applysets", name="my-set")
        assert (parent.version, parent.kind, parent.api_version) == (None, None, None)
        assert str(parent) == "applysets.company.com my-set"
        with pytest.raises(ValueError):
            parent.applyset_id()

    def test_is_frozen(self):
        parent = spec.ParentRef(group="", name="x")
        with pytest.raises(AttributeError):
            parent.name = "y"


def test_builtin_parent_kinds():
    assert spec.BUILTIN_PARENT_KINDS == {GroupKind("", "Secret"), GroupKind("", "ConfigMap")}


class TestKeepReason:
    @pytest.mark.parametrize("annotations, reason", [
        ({"helm.sh/resource-policy": "keep"}, "annotation helm.sh/resource-policy=keep"),
        ({"helm.sh/resource-policy": " Keep "}, "annotation helm.sh/resource-policy= Keep "),
        ({"cli-utils.sigs.k8s.io/on-remove": "keep"},
         "annotation cli-utils.sigs.k8s.io/on-remove=keep"),
        ({"client.lifecycle.config.k8s.io/deletion": "detach"},
         "annotation client.lifecycle.config.k8s.io/deletion=detach"),
        ({"argocd.argoproj.io/sync-options": "Prune=false"},
         "annotation argocd.argoproj.io/sync-options=Prune=false"),
        ({"argocd.argoproj.io/sync-options": "ServerSideApply=true, prune=FALSE"},
         "annotation argocd.argoproj.io/sync-options=ServerSideApply=true, prune=FALSE"),
        ({"kapp.k14s.io/delete-strategy": "orphan"}, "annotation kapp.k14s.io/delete-strategy=orphan"),
        ({"kustomize.toolkit.fluxcd.io/prune": "Disabled"},
         "annotation kustomize.toolkit.fluxcd.io/prune=Disabled"),
        ({"applyset.kubernetes.ansible/prune": "disabled"}, "annotation applyset.kubernetes.ansible/prune=disabled"),
    ])
    def test_protected(self, annotations, reason):
        assert spec.keep_reason(annotations) == reason

    @pytest.mark.parametrize("annotations", [
        None,
        {},
        {"unrelated": "keep"},
        {"helm.sh/resource-policy": "delete"},
        {"helm.sh/resource-policy": "keeper"},
        {"argocd.argoproj.io/sync-options": "ServerSideApply=true"},
        {"argocd.argoproj.io/sync-options": "Prune=true"},
        # Only a whole list entry counts, not a substring.
        {"argocd.argoproj.io/sync-options": "NoPrune=false"},
        {"kapp.k14s.io/delete-strategy": "default"},
        {"kustomize.toolkit.fluxcd.io/prune": "enabled"},
        {"applyset.kubernetes.ansible/prune": "enabled"},
        {"helm.sh/resource-policy": None},
    ])
    def test_not_protected(self, annotations):
        assert spec.keep_reason(annotations) is None

    def test_every_keep_annotation_is_recognised(self):
        for key, value in spec.KEEP_ANNOTATIONS.items():
            assert spec.keep_reason({key: value}) == f"annotation {key}={value}"


def test_object_id_is_one_shape_for_namespaced_and_cluster_scoped_objects():
    deployment = spec.ObjectId.of(spec.GroupKind("apps", "Deployment"), "shop", "web")
    assert deployment == ("apps", "Deployment", "shop", "web")
    assert str(deployment) == "Deployment.apps shop/web"
    assert deployment.group_kind == spec.GroupKind("apps", "Deployment")
    # None and "" both mean cluster-scoped: one key, not two.
    assert spec.ObjectId.of(spec.NAMESPACE_KIND, None, "shop") == spec.ObjectId.of(spec.NAMESPACE_KIND, "", "shop")
    assert str(spec.ObjectId.from_metadata(spec.NAMESPACE_KIND, {"name": "shop"})) == "Namespace shop"
    assert spec.ObjectId.from_metadata(spec.SECRET_KIND, {"name": "s", "namespace": "a"}).namespace == "a"
