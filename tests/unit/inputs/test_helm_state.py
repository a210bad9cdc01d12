"""inputs.helm_state: each run's own helm state, and what of the host's it is seeded with."""

import os

from applyset.inputs import helm_state


HOST = {"HELM_REPOSITORY_CONFIG": "/h/config/repositories.yaml", "HELM_REGISTRY_CONFIG": "/h/config/registry.json",
        "HELM_REPOSITORY_CACHE": "/h/cache/repository", "HELM_PLUGINS": "/h/plugins"}


def test_helm_env_is_read_as_helm_prints_it():
    text = 'HELM_BIN="/usr/bin/helm"\nHELM_CACHE_HOME="/root/.cache/helm"\nHELM_KUBECONTEXT=""\n'
    assert helm_state.parse_env(text) == {"HELM_BIN": "/usr/bin/helm", "HELM_CACHE_HOME": "/root/.cache/helm",
                                          "HELM_KUBECONTEXT": ""}
    assert helm_state.parse_env("") == {}


def test_every_state_variable_goes_to_the_runs_directory_and_plugins_stay_the_hosts():
    env = helm_state.private_env({"PATH": "/bin", "HELM_CACHE_HOME": "/shared"}, "/run", HOST)
    assert env["PATH"] == "/bin" and env["HELM_PLUGINS"] == "/h/plugins"
    assert {name: env[name] for name in helm_state.PRIVATE_PATHS} == {
        "HELM_CACHE_HOME": "/run/cache", "HELM_CONFIG_HOME": "/run/config", "HELM_DATA_HOME": "/run/data",
        "HELM_REPOSITORY_CACHE": "/run/cache/repository", "HELM_CONTENT_CACHE": "/run/cache/content",
        "HELM_REPOSITORY_CONFIG": "/run/config/repositories.yaml",
        "HELM_REGISTRY_CONFIG": "/run/config/registry/config.json", "KUBECACHEDIR": "/run/cache/kube"}
    assert "HELM_PLUGINS" not in helm_state.private_env({}, "/run", {})


def test_the_repository_list_and_logins_are_copied_and_the_named_repositorys_index_only_for_a_repo_reference():
    common = [("/h/config/repositories.yaml", "/run/config/repositories.yaml"),
              ("/h/config/registry.json", "/run/config/registry/config.json")]
    assert helm_state.seeds("bitnami/nginx", False, HOST, "/run") == common + [
        ("/h/cache/repository/bitnami-index.yaml", "/run/cache/repository/bitnami-index.yaml"),
        ("/h/cache/repository/bitnami-charts.txt", "/run/cache/repository/bitnami-charts.txt")]
    for ref, has_repo in (("nginx", True), ("bitnami/nginx", True), ("oci://r.example/charts/web", False),
                          ("./charts/web", False), ("nginx", False)):
        assert helm_state.seeds(ref, has_repo, HOST, "/run") == common, ref
    assert helm_state.seeds("bitnami/nginx", False, {}, "/run") == []


def test_an_existing_path_is_no_repository_reference(tmp_path, monkeypatch):
    (tmp_path / "charts" / "web").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert helm_state.named_repository("charts/web", False) is None
    assert helm_state.named_repository("charts/other", False) == "charts"
    assert not os.path.exists("charts/other")
