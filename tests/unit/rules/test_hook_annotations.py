"""hooks.py: which input objects are hooks, of which phase, weight and delete policy; refusals."""

import pytest
from applyset.rules import hooks
from applyset.errors import InputErrors
from applyset.kube.discovery import Discovery, Resource
from applyset.inputs.manifests import load_definition

RESOURCES = [Resource("", "v1", "ConfigMap", "configmaps", True), Resource("batch", "v1", "Job", "jobs", True),
             Resource("", "v1", "ServiceAccount", "serviceaccounts", True)]
ID = "applyset-test-v1"


def obj(kind, name, annotations=None, api="v1"):
    meta = {"name": name, "labels": {"app": "x"}}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def split(*docs):
    members, hook_set = hooks.split(load_definition(list(docs)), Discovery(list(RESOURCES)), ID, "shop")
    return [m.name for m in members], hook_set


def test_objects_without_hook_annotations_stay_members_in_input_order():
    members, hook_set = split(obj("ConfigMap", "a"), obj("ConfigMap", "b", {"other": "x"}))
    assert members == ["a", "b"] and hook_set.hooks == ()


def test_helm_install_and_upgrade_hooks_run_when_the_set_is_installed_or_upgraded():
    _, hook_set = split(obj("Job", "first", {"helm.sh/hook": "pre-install"}, api="batch/v1"),
                        obj("Job", "every", {"helm.sh/hook": "pre-install,pre-upgrade"}, api="batch/v1"),
                        obj("Job", "post", {"helm.sh/hook": "post-upgrade"}, api="batch/v1"))
    assert [h.desired.name for h in hook_set.of_phase(hooks.PRE_APPLY, installing=True)] == ["every", "first"]
    assert [h.desired.name for h in hook_set.of_phase(hooks.PRE_APPLY, installing=False)] == ["every"]
    assert [h.desired.name for h in hook_set.of_phase(hooks.POST_APPLY, installing=False)] == ["post"]
    assert hook_set.of_phase(hooks.POST_APPLY, installing=True) == []


def test_a_phase_runs_by_weight_then_helms_kind_order_then_name():
    _, hook_set = split(obj("Job", "late", {"applyset.kubernetes.ansible/hook": "pre-apply",
                                            "applyset.kubernetes.ansible/hook-weight": "5"}, api="batch/v1"),
                        obj("Job", "job", {"argocd.argoproj.io/hook": "PreSync"}, api="batch/v1"),
                        obj("Job", "b-job", {"helm.sh/hook": "pre-upgrade"}, api="batch/v1"),
                        obj("ServiceAccount", "sa", {"helm.sh/hook": "pre-upgrade"}),
                        obj("ConfigMap", "early", {"helm.sh/hook": "pre-upgrade", "helm.sh/hook-weight": "-1"}))
    order = hook_set.of_phase(hooks.PRE_APPLY, installing=False)
    assert [h.desired.name for h in order] == ["early", "sa", "b-job", "job", "late"]


def test_a_chart_s_rbac_hooks_go_before_its_job_whatever_their_names_or_input_order():
    """ingress-nginx's admission patch: every object of one weight, the Job first in the input."""
    rbac = [Resource("rbac.authorization.k8s.io", "v1", kind, kind.lower() + "s", not kind.startswith("Cluster"))
            for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")]
    helm = {"helm.sh/hook": "pre-install"}
    docs = [obj("Job", "a-create", helm, api="batch/v1")]
    docs += [obj(r.kind, "z-admission", helm, api="rbac.authorization.k8s.io/v1") for r in rbac]
    docs.append(obj("ServiceAccount", "z-admission", helm))
    _members, hook_set = hooks.split(load_definition(docs), Discovery(RESOURCES + rbac), ID, "shop")
    order = [h.desired.resource.kind for h in hook_set.of_phase(hooks.PRE_APPLY, installing=True)]
    assert order == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Job"]


def test_unknown_kinds_go_last_helm_by_kind_then_name_argo_cd_by_name():
    widgets = [Resource("example.com", "v1", kind, kind.lower() + "s", True) for kind in ("Zeta", "Alpha")]
    discovery = Discovery(RESOURCES + widgets)

    def ordered(key, value):
        docs = [obj("Zeta", "a", {key: value}, api="example.com/v1"), obj("Alpha", "b", {key: value},
                                                                          api="example.com/v1"),
                obj("Job", "z", {key: value}, api="batch/v1")]
        _members, hook_set = hooks.split(load_definition(docs), discovery, ID, "shop")
        return [(h.desired.resource.kind, h.desired.name) for h in hook_set.of_phase(hooks.PRE_APPLY, True)]

    assert ordered("helm.sh/hook", "pre-install") == [("Job", "z"), ("Alpha", "b"), ("Zeta", "a")]
    assert ordered("argocd.argoproj.io/hook", "PreSync") == [("Job", "z"), ("Zeta", "a"), ("Alpha", "b")]


def test_hook_succeeded_waits_for_the_phase_with_helm_and_for_the_run_with_argo_cd():
    _, hook_set = split(obj("Job", "helm", {"helm.sh/hook": "pre-install"}, api="batch/v1"),
                        obj("Job", "argo", {"argocd.argoproj.io/hook": "PreSync"}, api="batch/v1"),
                        obj("Job", "own", {"applyset.kubernetes.ansible/hook": "pre-apply"}, api="batch/v1"))
    scopes = {h.desired.name: h.succeeded_scope for h in hook_set.hooks}
    assert scopes == {"helm": hooks.AFTER_PHASE, "argo": hooks.AFTER_RUN, "own": hooks.AFTER_PHASE}


def test_hook_bodies_carry_no_part_of_label_and_name_their_set():
    _, hook_set = split(obj("Job", "migrate", {"helm.sh/hook": "pre-upgrade"}, api="batch/v1"))
    meta = hook_set.hooks[0].desired.body["metadata"]
    assert meta["labels"] == {"app": "x"} and meta["namespace"] == "shop"
    assert meta["annotations"][hooks.HOOK_OF] == ID


def test_argo_cd_values_and_delete_policies_map_onto_ours():
    _, hook_set = split(obj("ConfigMap", "fail", {"argocd.argoproj.io/hook": "SyncFail",
                                                  "argocd.argoproj.io/hook-delete-policy": "HookSucceeded,HookFailed"}),
                        obj("ConfigMap", "gone", {"argocd.argoproj.io/hook": "PostDelete"}),
                        obj("ConfigMap", "skip", {"argocd.argoproj.io/hook": "Skip"}))
    fail, gone = hook_set.hooks
    assert fail.moments == ((hooks.ON_FAILURE, hooks.ALWAYS),)
    assert fail.delete_policies == {hooks.SUCCEEDED, hooks.FAILED}
    assert gone.delete_policies == {hooks.BEFORE_CREATION}  # the default, as in Helm and Argo CD
    assert len(hook_set.warnings) == 1 and "skip" in hook_set.warnings[0]  # Skip: neither applied nor pruned


def test_our_annotation_wins_over_argo_cd_which_wins_over_helm():
    _, hook_set = split(obj("ConfigMap", "a", {"helm.sh/hook": "pre-delete", "argocd.argoproj.io/hook": "PostSync"}))
    assert hook_set.hooks[0].moments == ((hooks.POST_APPLY, hooks.ALWAYS),)


def test_helm_rollback_and_test_hooks_are_left_out_with_a_warning():
    members, hook_set = split(obj("ConfigMap", "t", {"helm.sh/hook": "test"}))
    assert members == [] and hook_set.hooks == ()
    assert "helm.sh/hook: test is not run by this collection" in hook_set.warnings[0]


def test_every_bad_annotation_is_refused_at_once_naming_the_object_and_the_accepted_values():
    with pytest.raises(InputErrors) as caught:
        split(obj("ConfigMap", "a", {"helm.sh/hook": "pre-instal"}),
              obj("ConfigMap", "b", {"applyset.kubernetes.ansible/hook": "post-apply",
                                     "applyset.kubernetes.ansible/hook-weight": "high"}),
              obj("ConfigMap", "c", {"argocd.argoproj.io/hook": "PreSync",
                                     "argocd.argoproj.io/hook-delete-policy": "Never"}))
    text = str(caught.value)
    assert "3 problems" in text
    assert "(ConfigMap shop/a)" in text and "unknown value 'pre-instal'; accepted: pre-install, pre-upgrade" in text
    assert "(ConfigMap shop/b)" in text and "'high' is not an integer" in text
    assert "(ConfigMap shop/c)" in text and "accepted: BeforeHookCreation, HookSucceeded, HookFailed" in text


def test_an_object_given_as_a_hook_and_as_a_member_is_refused():
    with pytest.raises(InputErrors, match=r"\(ConfigMap shop/a\): the same object is given as a hook and as a member"):
        split(obj("ConfigMap", "a", {"helm.sh/hook": "post-upgrade"}), obj("ConfigMap", "a"))


def test_a_phase_mixing_helm_and_argo_cd_hooks_sorts_one_way():
    """Argo CD's kind list has two kinds more than Helm's; the ranks stay comparable."""
    _, hook_set = split(obj("ConfigMap", "b-helm", {"helm.sh/hook": "pre-install"}),
                        obj("ConfigMap", "a-argo", {"argocd.argoproj.io/hook": "PreSync"}),
                        obj("ServiceAccount", "z-argo", {"argocd.argoproj.io/hook": "PreSync"}))
    assert [h.desired.name for h in hook_set.of_phase(hooks.PRE_APPLY, True)] == ["z-argo", "a-argo", "b-helm"]
