"""A fleet of three real control planes: inventory plugin -> canary rollout -> a failing cluster -> audit.

One scenario runs once (the ``fleet`` fixture), the tests below check its parts:

1. ``ansible-inventory --list`` over the applyset.kubernetes.kubeconfig plugin: one host per
   cluster (eu-1, eu-2, us-1), their connection variables, groups, and no credentials;
2. playbooks/fleet-deploy.yml deploys the example shop everywhere, with per-cluster values
   from group_vars (playbooks/) and host_vars (next to the inventory);
3. eu-2's credentials are swapped for a read-only ServiceAccount (RBAC-limited). The next
   rollout (the banner removed) fails in the preview, and nothing changes anywhere;
4. the same rollout without the preview gate: the canary eu-1 is updated, eu-2 fails and
   stops the rollout, us-1 (the next batch) is untouched;
5. a stale set is left on us-1; playbooks/fleet-audit.yml audits the fleet plus us-2, whose
   token was never valid, and writes one report (JSON, Markdown, HTML), shown in headless
   Chromium.

The clusters are started for this module and stopped at its end (three control planes, about
530 MB each). ``APPLYSET_TEST_FLEET_KUBECONFIGS=a:b:c`` uses three running clusters instead.
Step timings and the report, page and screenshot are left in tests/output/fleet/.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from ansible_cli import BIN, REPO_ROOT
from kubeapi import KubeAPI, wait_for
from local_cluster.cluster import LocalCluster
from chromium import screenshot_colours

OUTPUT = REPO_ROOT / "tests" / "output" / "fleet"
HOSTS = ("eu-1", "eu-2", "us-1")
NAMESPACE = "shop-demo"  # the example shop's manifests are written for it
SHOP_CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


class Steps:
    """Wall time of each step of the scenario, printed and saved (never asserted)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def run(self, name, action, *args, **kwargs):
        started = time.monotonic()
        try:
            return action(*args, **kwargs)
        finally:
            self.seconds[name] = round(time.monotonic() - started, 1)
            print(f"fleet step {name}: {self.seconds[name]}s", file=sys.stderr)


# ----- the clusters ---------------------------------------------------------------------------------


def start_clusters(steps: Steps):
    """Three kubeconfigs: given ones, or three local control planes started here (stopped by the caller)."""
    given = [p for p in os.environ.get("APPLYSET_TEST_FLEET_KUBECONFIGS", "").split(os.pathsep) if p]
    if given:
        assert len(given) == 3, "APPLYSET_TEST_FLEET_KUBECONFIGS needs three kubeconfig paths"
        return given, []
    started = []
    for host in HOSTS:
        local = LocalCluster(state_dir=Path(tempfile.mkdtemp(prefix=f"applyset-fleet-{host}-")))
        started.append(local)
        steps.run(f"start {host}", local.up, log=lambda msg: print(msg, file=sys.stderr))
    return [str(local.kubeconfig) for local in started], started


def forget_the_shop(kube: KubeAPI):
    """Clusters given from outside may hold an earlier run's shop; start from none."""
    kube.delete(f"/api/v1/namespaces/{NAMESPACE}")
    kube.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/promotions.shop.example.com")
    wait_for(lambda: kube.get(f"/api/v1/namespaces/{NAMESPACE}") is None, timeout=120, what="shop-demo gone")


def read_only_kubeconfig(kube: KubeAPI, admin_kubeconfig: str, path: Path) -> str:
    """A kubeconfig for a ServiceAccount that may read everything and write nothing; returns its token."""
    name = f"fleet-reader-{secrets.token_hex(3)}"
    kube.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]})
    kube.create("/api/v1/namespaces/default/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    kube.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]})
    token = kube.create(f"/api/v1/namespaces/default/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    write_token_kubeconfig(admin_kubeconfig, path, token)
    return token


def write_token_kubeconfig(admin_kubeconfig: str, path: Path, token: str):
    """The admin kubeconfig's cluster and context, with a bearer token as the user."""
    config = yaml.safe_load(Path(admin_kubeconfig).read_text())
    config["users"] = [{"name": "fleet", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "fleet"
    path.write_text(json.dumps(config))
    path.chmod(0o600)


def snapshot(kube: KubeAPI) -> dict:
    """resourceVersion of every object of the shop's namespace that a rollout could touch."""
    found = {}
    for plural in ("configmaps", "secrets", "services"):
        for item in (kube.get(f"/api/v1/namespaces/{NAMESPACE}/{plural}") or {"items": []})["items"]:
            found[f"{plural}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    deployment = kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/web")
    found["deployments/web"] = deployment and deployment["metadata"]["resourceVersion"]
    return found


def configmap_names(kube: KubeAPI) -> set:
    return {i["metadata"]["name"] for i in (kube.get(SHOP_CONFIGMAPS) or {"items": []})["items"]}


def fleet_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG"}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_INVENTORY_UNPARSED_FAILED="1",
               KUBECONFIG=os.devnull)  # no default cluster: a host without its own would fail
    env.update(extra)
    return env


def ansible_playbook(playbook: Path, *args, extra_vars=None):
    cmd = [str(BIN / "ansible-playbook"), str(playbook), *args]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return subprocess.run(cmd, capture_output=True, text=True, env=fleet_env(), cwd=REPO_ROOT, timeout=900)


def fleet_playbook(playbook, inventory: Path, *args, extra_vars=None):
    return ansible_playbook(REPO_ROOT / "playbooks" / playbook, "-i", str(inventory), *args, extra_vars=extra_vars)


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


# ----- the scenario ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    steps = Steps()
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    started_at = time.monotonic()
    kubeconfigs, started = start_clusters(steps)
    try:
        yield run_scenario(tmp_path_factory.mktemp("fleet"), kubeconfigs, bool(started), steps)
    finally:
        for host, local in zip(HOSTS, started):
            steps.run(f"stop {host}", local.down, log=lambda msg: print(msg, file=sys.stderr))
            shutil.rmtree(local.state_dir, ignore_errors=True)
        steps.seconds["total"] = round(time.monotonic() - started_at, 1)
        (OUTPUT / "timings.json").write_text(json.dumps(steps.seconds, indent=2) + "\n")
        print("fleet timings: " + json.dumps(steps.seconds), file=sys.stderr)


def run_scenario(work: Path, admin_kubeconfigs: list, fresh: bool, steps: Steps) -> dict:
    kubes = {host: KubeAPI(path) for host, path in zip(HOSTS, admin_kubeconfigs)}
    if not fresh:
        for kube in kubes.values():
            forget_the_shop(kube)
    # The inventory points at copies, so that eu-2's credentials can be swapped later.
    inventory_dir = work / "inventory"
    inventory_dir.mkdir()
    for host, path in zip(HOSTS, admin_kubeconfigs):
        shutil.copy(path, inventory_dir / f"{host}.kubeconfig")
    (inventory_dir / "fleet.kubeconfig.yml").write_text(yaml.safe_dump({
        "plugin": "applyset.kubernetes.kubeconfig",
        "kubeconfigs": [{"path": f"{host}.kubeconfig", "name": host} for host in HOSTS],
        "groups": {"canary": "inventory_hostname == 'eu-1'"},
        "keyed_groups": [{"key": "applyset_server.split(':')[-1]", "prefix": "port"}],
    }, sort_keys=False))
    write(inventory_dir / "host_vars" / "us-1.yml", """
        shop_currency: USD
        """)
    run = {"kubes": kubes, "steps": steps, "inventory": inventory_dir / "fleet.kubeconfig.yml",
           "admin_kubeconfigs": admin_kubeconfigs}

    run["inventory_list"] = steps.run("ansible-inventory --list", subprocess.run,
                                      [str(BIN / "ansible-inventory"), "-i", str(run["inventory"]), "--list",
                                       "--yaml"],
                                      capture_output=True, text=True, env=fleet_env(), timeout=120)
    run["v1"] = steps.run("rollout v1 (preview + 3 batches)", fleet_playbook, "fleet-deploy.yml", run["inventory"])
    run["after_v1"] = {host: snapshot(kube) for host, kube in kubes.items()}
    run["v1_objects"] = {host: configmap_names(kube) for host, kube in kubes.items()}
    run["settings"] = {host: (kube.get(f"{SHOP_CONFIGMAPS}/shop-cluster-settings") or {}).get("data")
                       for host, kube in kubes.items()}

    run["awx"] = steps.run("AWX-style: stored inventory, credential file moved, preview", awx_style_preview,
                           work, inventory_dir, admin_kubeconfigs)

    # eu-2 becomes RBAC-limited: its deployer may read everything and write nothing.
    run["eu2_token"] = read_only_kubeconfig(kubes["eu-2"], admin_kubeconfigs[1], inventory_dir / "eu-2.kubeconfig")
    run["gated"] = steps.run("rollout v2, stopped by the preview", fleet_playbook, "fleet-deploy.yml",
                             run["inventory"], extra_vars={"shop_without_banner": True})
    run["after_gate"] = {host: snapshot(kube) for host, kube in kubes.items()}
    run["canary"] = steps.run("rollout v2 without preview, stopped at eu-2", fleet_playbook, "fleet-deploy.yml",
                              run["inventory"], "--skip-tags", "preview", extra_vars={"shop_without_banner": True})
    run["after_canary"] = {host: snapshot(kube) for host, kube in kubes.items()}
    run["canary_objects"] = {host: configmap_names(kube) for host, kube in kubes.items()}

    # A stale set on us-1: its only member was deleted by hand. And a fourth host, us-2, whose token
    # the API server never issued (us-1's server): it cannot be checked at all.
    leave_an_empty_set(admin_kubeconfigs[2], work)
    write_token_kubeconfig(admin_kubeconfigs[2], inventory_dir / "us-2.kubeconfig", "not-a-valid-token")
    audit_inventory = inventory_dir / "audit.kubeconfig.yml"
    config = yaml.safe_load(run["inventory"].read_text())
    config["kubeconfigs"].append({"path": "us-2.kubeconfig", "name": "us-2"})
    audit_inventory.write_text(yaml.safe_dump(config, sort_keys=False))
    run["audit"] = steps.run("fleet audit (4 hosts)", fleet_playbook, "fleet-audit.yml", audit_inventory,
                             extra_vars={"audit_output_dir": str(OUTPUT)})
    return run


def merged_kubeconfig(admin_kubeconfigs: list, path: Path):
    """One kubeconfig with a context (and its own cluster and user entries) per host, as one AWX credential holds."""
    merged = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for host, admin in zip(HOSTS, admin_kubeconfigs):
        config = yaml.safe_load(Path(admin).read_text())
        merged["clusters"].append({"name": host, "cluster": config["clusters"][0]["cluster"]})
        merged["users"].append({"name": host, "user": config["users"][0]["user"]})
        merged["contexts"].append({"name": host, "context": {"cluster": host, "user": host}})
    merged["current-context"] = HOSTS[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged))
    path.chmod(0o600)


def awx_style_preview(work: Path, inventory_dir: Path, admin_kubeconfigs: list):
    """AWX syncs the inventory once, with the credential's kubeconfig at one temporary path, and runs each
    job with the same credential at another. With set_kubeconfig: false the hosts keep only their
    context, and the modules find the file through K8S_AUTH_KUBECONFIG when the job runs."""
    sync_file, job_file = work / "sync" / "kubeconfig", work / "job" / "kubeconfig"
    merged_kubeconfig(admin_kubeconfigs, sync_file)
    source = work / "awx.kubeconfig.yml"
    source.write_text(yaml.safe_dump({"plugin": "applyset.kubernetes.kubeconfig", "set_kubeconfig": False,
                                      "groups": {"canary": "inventory_hostname == 'eu-1'"}}))
    stored = inventory_dir / "awx-stored-inventory.yml"  # AWX imports the host_vars beside it too
    sync = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(source), "--list", "--yaml",
                           "--output", str(stored)], capture_output=True, text=True,
                          env=fleet_env(KUBECONFIG=str(sync_file)), timeout=120)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    job_file.parent.mkdir()
    sync_file.rename(job_file)
    cmd = [str(BIN / "ansible-playbook"), str(REPO_ROOT / "playbooks" / "fleet-deploy.yml"), "-i", str(stored),
           "--tags", "preview"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=fleet_env(K8S_AUTH_KUBECONFIG=str(job_file)),
                          cwd=REPO_ROOT, timeout=600)
    return {"inventory": stored.read_text(), "preview": proc}


def leave_an_empty_set(admin_kubeconfig: str, work: Path):
    kube = KubeAPI(admin_kubeconfig)
    playbook = work / "legacy.yml"
    write(playbook, f"""
        - name: Deploy a one-object set that will be left empty
          hosts: localhost
          gather_facts: false
          tasks:
            - name: Apply it
              applyset.kubernetes.applyset_apply:
                parent: legacy
                namespace: {NAMESPACE}
                kubeconfig: {admin_kubeconfig}
                definition:
                  - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: legacy-settings}}}}
        """)
    proc = ansible_playbook(playbook)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kube.delete(f"{SHOP_CONFIGMAPS}/legacy-settings")


def failed_hosts(proc) -> set:
    return set(re.findall(r"^fatal: \[([^\]]+)\]", proc.stdout, flags=re.M))


# ----- 1. inventory ----------------------------------------------------------------------------------


def test_inventory_plugin_makes_one_host_per_cluster_without_credentials(fleet):
    proc = fleet["inventory_list"]  # in YAML: an inventory file as AWX would store it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    groups = yaml.safe_load(proc.stdout)["all"]["children"]
    hostvars = groups["kubernetes_clusters"]["hosts"]
    assert list(hostvars) == list(HOSTS)
    assert list(groups["canary"]["hosts"]) == ["eu-1"]
    for host, admin in zip(HOSTS, fleet["admin_kubeconfigs"]):
        variables = hostvars[host]
        assert variables["applyset_kubeconfig"] == str(fleet["inventory"].parent / f"{host}.kubeconfig")
        assert variables["applyset_context"] == "applyset-local"
        server = yaml.safe_load(Path(admin).read_text())["clusters"][0]["cluster"]["server"]
        assert variables["applyset_server"] == server
        assert host in groups[f"port_{server.rsplit(':', 1)[1]}"]["hosts"]
        key = yaml.safe_load(Path(admin).read_text())["users"][0]["user"]["client-key-data"]
        assert key[:40] not in proc.stdout


# ----- 2. rollout ------------------------------------------------------------------------------------


def test_rollout_reaches_every_cluster_canary_first_with_per_cluster_values(fleet):
    proc = fleet["v1"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The canary is deployed alone, before the others: three rollout batches in inventory order.
    batches = re.findall(r"PLAY \[Roll out.*?\n(.*?)(?=PLAY |\Z)", proc.stdout, flags=re.S)
    assert [sorted(set(re.findall(r"^changed: \[([^\]]+)\]", b, flags=re.M))) for b in batches] == \
        [["eu-1"], ["eu-2"], ["us-1"]]
    for host in HOSTS:
        assert {"shop-settings", "holiday-banner", "shop-cluster-settings"} <= fleet["v1_objects"][host]
    assert fleet["settings"]["eu-1"] == {"cluster": "eu-1", "currency": "EUR", "max-connections": "100"}
    assert fleet["settings"]["us-1"]["currency"] == "USD"  # host_vars next to the inventory
    assert fleet["settings"]["eu-2"]["cluster"] == "eu-2"


def test_awx_style_stored_inventory_reaches_each_cluster_through_the_job_credential(fleet):
    stored = yaml.safe_load(fleet["awx"]["inventory"])
    hosts = stored["all"]["children"]["kubernetes_clusters"]["hosts"]
    assert sorted(hosts) == sorted(HOSTS) and all("applyset_kubeconfig" not in v for v in hosts.values())
    proc = fleet["awx"]["preview"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for host in HOSTS:  # each host previewed its own cluster, which holds the shop already: no change
        assert f"{host}: {{'created': 0, 'configured': 0," in proc.stdout


# ----- 3. the preview gate ---------------------------------------------------------------------------


def test_a_cluster_that_fails_the_preview_stops_the_run_before_anything_is_written(fleet):
    proc = fleet["gated"]
    assert proc.returncode != 0
    assert failed_hosts(proc) == {"eu-2"}
    assert "forbidden" in proc.stdout
    assert "PLAY [Roll out" not in proc.stdout
    assert fleet["after_gate"] == fleet["after_v1"]


# ----- 4. the rollout stops at the failing cluster ------------------------------------------------------


def test_a_failing_cluster_stops_the_rollout_and_the_next_batch_is_untouched(fleet):
    proc = fleet["canary"]
    assert proc.returncode != 0
    assert failed_hosts(proc) == {"eu-2"}
    assert "holiday-banner" not in fleet["canary_objects"]["eu-1"]  # the canary got the new version
    assert fleet["after_canary"]["eu-1"] != fleet["after_gate"]["eu-1"]
    assert fleet["after_canary"]["eu-2"] == fleet["after_gate"]["eu-2"]  # refused, nothing written
    assert fleet["after_canary"]["us-1"] == fleet["after_gate"]["us-1"]  # never reached
    assert "us-1" not in re.findall(r"^(?:ok|changed|fatal): \[([^\]]+)\]", proc.stdout.split("PLAY [Roll out")[-1],
                                    flags=re.M)


# ----- 5. the fleet audit ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(fleet):
    assert (OUTPUT / "applyset-audit.json").exists(), fleet["audit"].stdout + fleet["audit"].stderr
    return json.loads((OUTPUT / "applyset-audit.json").read_text())


def test_audit_fails_only_for_the_cluster_it_could_not_check_and_says_where_the_report_is(fleet):
    proc = fleet["audit"]
    assert proc.returncode != 0
    assert failed_hosts(proc) == {"us-2"}
    assert f"report in {OUTPUT}/applyset-audit.html" in " ".join(proc.stdout.split())


def test_audit_report_covers_every_cluster(report):
    clusters = {c["name"]: c for c in report["clusters"]}
    assert list(clusters) == [*HOSTS, "us-2"]
    assert all(clusters[h]["checked"] and clusters[h]["complete"] for h in HOSTS)
    assert not clusters["us-2"]["checked"] and "Unauthorized" in clusters["us-2"]["error"]["message"]
    assert not report["ok"] and report["summary"]["clusters_failed"] == 1
    shop = {(a["cluster"], a["parent"]["name"]): a for a in report["applysets"]}
    # Members as verify counts them: the Service's EndpointSlice and Endpoints are derived, not members.
    assert shop[("eu-1", "shop")]["member_count"] == 8 and shop[("eu-2", "shop")]["member_count"] == 9
    assert {d["kind"] for d in shop[("eu-1", "shop")]["derived"]} == {"EndpointSlice", "Endpoints"}


def test_audit_report_shows_the_drift_the_stopped_rollout_left(report):
    drift = {d["set"]: d for d in report["drift"]}
    members = next(d for d in drift[f"Secret {NAMESPACE}/shop"]["differences"] if d["aspect"] == "members")
    assert members["objects"] == [{"object": f"ConfigMap {NAMESPACE}/holiday-banner", "on": ["eu-2", "us-1"],
                                   "missing_on": ["eu-1"]}]
    presence = drift[f"Secret {NAMESPACE}/legacy"]["differences"][0]
    assert presence["aspect"] == "presence" and presence["summary"] == "missing on eu-1, eu-2"


def test_audit_report_lists_the_stale_set(report):
    [stale] = report["stale"]
    assert (stale["cluster"], stale["set"]) == ("us-1", f"Secret {NAMESPACE}/legacy")
    assert "no members" in stale["reasons"][0]


def test_audit_markdown_and_html_say_the_same(report):
    markdown = (OUTPUT / "applyset-audit.md").read_text()
    page = (OUTPUT / "applyset-audit.html").read_text()
    for text in ("**PROBLEMS FOUND**", "`ConfigMap shop-demo/holiday-banner`: on eu-2, us-1; missing on eu-1",
                 "| us-1 | Secret shop-demo/legacy | it has no members"):
        assert text in markdown
    for text in ("Problems found", "ConfigMap shop-demo/holiday-banner", "Unauthorized", "it has no members",
                 ">us-2<", "8 members", "9 members"):
        assert text in page


class TagBalance(html.parser.HTMLParser):
    """Counts what the page loads from elsewhere and checks that its block elements are closed."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self):
        super().__init__()
        self.open, self.external, self.scripts, self.errors = [], [], 0, []

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()


def test_audit_page_is_self_contained_and_well_formed(report):
    page = (OUTPUT / "applyset-audit.html").read_text()
    parsed = TagBalance()
    parsed.feed(page)
    assert parsed.external == [] and parsed.scripts == 0
    assert "url(" not in page and "@import" not in page
    assert parsed.errors == [] and parsed.open == []


def test_audit_page_renders_in_headless_chromium(report):
    """The page as a person sees it: a screenshot, checked for the colours of its verdicts."""
    screenshot = OUTPUT / "applyset-audit.png"
    colours = screenshot_colours(OUTPUT / "applyset-audit.html", screenshot, (1280, 2000))
    # The red of "Problems found" and errors, the green of healthy cells, the amber of drift.
    assert (0xCF, 0x22, 0x2E) in colours and (0x1A, 0x7F, 0x37) in colours and (0x9A, 0x67, 0x00) in colours
    print(f"screenshot: {screenshot}", file=sys.stderr)
