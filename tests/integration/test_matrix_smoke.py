"""The smoke test every Python x ansible-core combination of the matrix runs (noxfile.py).

One pass through what users do with playbooks/deploy.yml, on whatever ansible-core and
Python run pytest: preview in check mode (nothing written), deploy, run again (no
change), preview a prune in check mode (nothing deleted), prune, and read the set
back with an ad hoc applyset_info. Small on purpose: the full suite covers the
behaviour, this covers the interfaces between the collection and ansible-core, and that
none of them is deprecated in the ansible-core at hand.
"""

from __future__ import annotations

import re
import sys
import textwrap

from ansible_cli import WEB_MANIFEST, run_module, run_playbook

# What deploy.yml picks up from `shop_manifests`; 50-banner.yaml is what
# `shop_without_banner=true` leaves out, so the second deploy prunes it.
MANIFESTS = {
    "20-config.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
        data: {currency: EUR}
        """,
    "30-web.yaml": WEB_MANIFEST,
    "50-banner.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: banner}
        data: {text: Sale}
        """,
}


def changed_count(output: str) -> int:
    """The `changed=` count of localhost in the PLAY RECAP (same format on every ansible-core)."""
    match = re.search(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)", output, re.MULTILINE)
    assert match, f"no PLAY RECAP in the output:\n{output}"
    return int(match.group(1))


def assert_no_deprecation(output: str) -> None:
    # Whatever this ansible-core deprecates, the collection and its playbooks must not use it
    # (ansible-core shows deprecation warnings unless deprecation_warnings is turned off).
    assert "[DEPRECATION WARNING]" not in output, output


def live(kube, namespace) -> set[str]:
    names = set()
    for path, kind in [(f"/api/v1/namespaces/{namespace}/configmaps", "ConfigMap"),
                       (f"/api/v1/namespaces/{namespace}/services", "Service"),
                       (f"/apis/apps/v1/namespaces/{namespace}/deployments", "Deployment")]:
        for item in kube.get(path)["items"]:
            if "applyset.kubernetes.io/part-of" in item["metadata"].get("labels", {}):
                names.add(f"{kind}/{item['metadata']['name']}")
    return names


def test_deploy_noop_prune_and_check_mode(cluster, kube, namespace, tmp_path):
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for name, text in MANIFESTS.items():
        (manifests / name).write_text(textwrap.dedent(text).lstrip())
    base_vars = {"shop_manifests": str(manifests), "shop_namespace": namespace}
    everything = {"ConfigMap/settings", "ConfigMap/banner", "Deployment/web", "Service/web"}

    def deploy(check=False, **extra):
        proc = run_playbook(cluster, "playbooks/deploy.yml", extra_vars={**base_vars, **extra},
                            check=check, diff=check)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_no_deprecation(proc.stdout + proc.stderr)
        return proc.stdout + proc.stderr

    output = deploy(check=True)
    assert changed_count(output) == 1
    assert live(kube, namespace) == set()
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop") is None

    assert changed_count(deploy()) == 1
    assert live(kube, namespace) == everything
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop") is not None

    assert changed_count(deploy()) == 0, "a second run with the same input changed something"

    output = deploy(check=True, shop_without_banner=True)
    assert changed_count(output) == 1
    assert live(kube, namespace) == everything, "check mode pruned"

    assert changed_count(deploy(shop_without_banner=True)) == 1
    assert live(kube, namespace) == everything - {"ConfigMap/banner"}

    rc, result, output = run_module(cluster, "applyset_info", {"parent": "shop", "namespace": namespace})
    assert rc == 0, output
    assert_no_deprecation(output)
    assert result["changed"] is False
    [applyset] = result["applysets"]
    assert applyset["id_matches"] is True
    assert applyset["tool"] == "applyset.kubernetes"
    print(f"smoke passed on Python {sys.version.split()[0]}", file=sys.stderr)
