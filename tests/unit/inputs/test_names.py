"""names: object and namespace names as the API server checks them."""

import pytest

from applyset.inputs import names
from applyset.errors import InputErrors
from applyset.inputs.manifests import Manifest
from applyset.inputs.manifest_checks import validate


class TestRules:
    @pytest.mark.parametrize("value", ["a", "web-1", "0abc", "a" * 63])
    def test_valid_labels(self, value):
        assert names.rule_problems(names.DNS1123_LABEL, value) == []

    @pytest.mark.parametrize("value,problem", [
        ("Tenant_A", "is not a valid DNS-1123 label"), ("-a", "is not a valid DNS-1123 label"),
        ("a.b", "is not a valid DNS-1123 label"), ("a" * 64, "is longer than 63 characters"),
        ("a\n", "is not a valid DNS-1123 label"), ("", "is not a valid DNS-1123 label"),
    ])
    def test_invalid_labels(self, value, problem):
        assert problem in names.rule_problems(names.DNS1123_LABEL, value)

    def test_subdomains_allow_dots_and_253_characters(self):
        assert names.rule_problems(names.DNS1123_SUBDOMAIN, "widgets.example.com") == []
        assert names.rule_problems(names.DNS1123_SUBDOMAIN, "a." * 126 + "a") == []
        assert names.rule_problems(names.DNS1123_SUBDOMAIN, "a" * 254) == ["is longer than 253 characters"]
        assert names.rule_problems(names.DNS1123_SUBDOMAIN, "a..b") == ["is not a valid DNS-1123 subdomain"]

    def test_dns1035_labels_start_with_a_letter(self):
        assert names.rule_problems(names.DNS1035_LABEL, "web") == []
        assert names.rule_problems(names.DNS1035_LABEL, "1web") == ["is not a valid DNS-1035 label"]

    def test_path_segments(self):
        assert names.rule_problems(names.PATH_SEGMENT, "system:controller:x") == []
        assert names.rule_problems(names.PATH_SEGMENT, "..") == ["may not be '..'"]
        assert names.rule_problems(names.PATH_SEGMENT, "a/b%c") == ["may not contain '/'", "may not contain '%'"]


class TestRulePerKind:
    @pytest.mark.parametrize("group,kind,rule", [
        ("", "Namespace", names.DNS1123_LABEL),
        ("", "Service", names.DNS1035_LABEL),
        ("apps", "StatefulSet", names.DNS1123_LABEL),
        ("", "ConfigMap", names.DNS1123_SUBDOMAIN),
        ("apps", "Deployment", names.DNS1123_SUBDOMAIN),
        ("batch", "CronJob", names.DNS1123_SUBDOMAIN),
        ("rbac.authorization.k8s.io", "ClusterRole", names.PATH_SEGMENT),
        ("apiextensions.k8s.io", "CustomResourceDefinition", names.DNS1123_SUBDOMAIN),
        ("example.com", "Widget", names.PATH_SEGMENT),
        ("networking.k8s.io", "IPAddress", names.PATH_SEGMENT),
    ])
    def test_rule(self, group, kind, rule):
        assert names.name_rule(group, kind) == rule

    def test_custom_resources_of_a_crd_in_the_input_are_subdomains(self):
        assert names.name_rule("example.com", "Widget", served_by_crd=True) == names.DNS1123_SUBDOMAIN

    def test_problem_names_field_rule_and_kind(self):
        problem = names.name_problem("", "Service", "1web")
        assert problem == ('metadata.name "1web" is not a valid DNS-1035 label; a Service name must be a '
                           "DNS-1035 label: " + names.RULE_TEXT[names.DNS1035_LABEL])
        assert names.name_problem("", "ConfigMap", "web.config") is None
        assert names.name_problem("rbac.authorization.k8s.io", "ClusterRole", "system:Admin") is None

    def test_cronjob_names_are_limited_to_52_characters(self):
        assert names.name_problem("batch", "CronJob", "a" * 52) is None
        assert "longer than 52 characters" in names.name_problem("batch", "CronJob", "a" * 53)

    def test_namespace_problem_and_fix(self):
        assert names.namespace_problem("shop") is None
        assert names.namespace_problem("Tenant_A") == (
            'metadata.namespace "Tenant_A" is not a valid DNS-1123 label; a namespace name must be a '
            "DNS-1123 label: " + names.RULE_TEXT[names.DNS1123_LABEL])
        assert names.fix_for("Tenant_A") == 'use lower case letters, digits and "-", e.g. "tenant-a"'
        assert names.fix_for("___") == 'use lower case letters, digits and "-"'


class TestOptions:
    @pytest.mark.parametrize("parent", [
        "shop", "configmaps/shop.v1", {"kind": "Secret", "name": "shop", "namespace": "shop"},
        {"apiVersion": "x.example.com/v1", "kind": "Set", "metadata": {"name": "a"}},
        42, "configmaps/",  # the wrong shape is the parent's resolution's to report
    ])
    def test_valid_parent_options_pass(self, parent):
        assert names.check_options(parent, "shop") is None
        # The same parent beside a bad namespace: only the namespace is reported, so the parent was
        # checked and found valid (not skipped).
        with pytest.raises(InputErrors) as raised:
            names.check_options(parent, "Tenant_A")
        assert [error.obj for error in raised.value.errors] == ["option namespace"]

    def test_invalid_namespace_option(self):
        with pytest.raises(InputErrors) as raised:
            names.check_options("shop", "Tenant_A")
        [error] = raised.value.errors
        assert error.obj == "option namespace"
        assert error.message.startswith('namespace "Tenant_A" is not a valid DNS-1123 label')
        assert "tenant-a" in error.fix

    def test_invalid_parent_name_and_namespace(self):
        with pytest.raises(InputErrors) as raised:
            names.check_options({"name": "My_Set", "namespace": "A B"}, None)
        assert [(e.obj, e.message.split(";")[0]) for e in raised.value.errors] == [
            ("option parent", 'name "My_Set" is not a valid DNS-1123 subdomain'),
            ("option parent", 'namespace "A B" is not a valid DNS-1123 label')]
        with pytest.raises(InputErrors, match="ApplySet parent"):
            names.check_options("secrets/UPPER", None)
        with pytest.raises(InputErrors):
            names.check_options({"apiVersion": "x/v1", "kind": "S", "metadata": {"name": "x", "namespace": "_"}}, None)


def problems(*documents):
    try:
        validate([Manifest(document, f"item {number}") for number, document in enumerate(documents, 1)])
    except InputErrors as raised:
        return [(error.obj, error.message) for error in raised.errors]
    return []


class TestValidateUsesTheRules:
    def test_invalid_member_names_are_refused_with_field_and_rule(self):
        found = problems(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web", "namespace": "shop"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Config_1", "namespace": "Tenant_A"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop.prod"}},
        )
        assert [(obj, message.split(";")[0]) for obj, message in found] == [
            ("item 1 (Service shop/1web)", 'metadata.name "1web" is not a valid DNS-1035 label'),
            ("item 2 (ConfigMap Tenant_A/Config_1)", 'metadata.name "Config_1" is not a valid DNS-1123 subdomain'),
            ("item 2 (ConfigMap Tenant_A/Config_1)", 'metadata.namespace "Tenant_A" is not a valid DNS-1123 label'),
            ("item 3 (Namespace shop.prod)", 'metadata.name "shop.prod" is not a valid DNS-1123 label'),
        ]

    def test_namespace_of_a_cluster_scoped_kind_is_not_checked(self):
        # kubectl drops it, and so do we (with a warning) when the plan is built.
        assert problems({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": "system:x", "namespace": "Not_Valid"}}) == []

    def test_custom_resources_follow_their_crd_in_the_input(self):
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Cluster",
                        "names": {"kind": "Widget", "plural": "widgets"}}}
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "W_1", "namespace": "X_Y"}}
        other = {"apiVersion": "other.example.com/v1", "kind": "Gadget", "metadata": {"name": "G_1"}}
        assert [message.split(";")[0] for _obj, message in problems(crd, widget, other)] == [
            'metadata.name "W_1" is not a valid DNS-1123 subdomain']
