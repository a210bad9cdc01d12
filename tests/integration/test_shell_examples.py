"""The shell examples of README.md, docs/ and the role READMEs run as written (issue 18).

Every ```sh / ```bash / ```shell / ```console block of a page runs, in page order, with ``bash -e``
in a copy of the repository (its tracked files, the venv linked in, the collection linked as
``make deps`` links it), with ``PATH`` starting at the venv and ``ANSIBLE_CONFIG`` set. A console
block's ``$`` lines are the commands and the lines after each are its output, whose key lines must
appear in what the commands print. A block that cannot run here has the marker
``<!-- example: not run: <reason> -->`` on the line before its fence.

Only names, namespaces and placeholders are substituted (``PAGES`` lists each substitution and
why). What a page presupposes is set up first and named in its setup function. Where to run:

- Blocks that work on a set of their own run against the shared test cluster
  (``APPLYSET_TEST_KUBECONFIG``), in the test's fresh namespace.
- Blocks that deploy the example shop (``examples/shop``: the Namespace ``shop-demo`` and the CRD
  ``promotions.shop.example.com``, both cluster-wide names no substitution can change) run against
  a control plane of the test's own, so that they never meet another suite's objects.
- Blocks that start a control plane themselves (``make demo``, ``hack/local-cluster up``) do so in
  a temporary state directory (``APPLYSET_CLUSTER_DIR`` or their ``--state-dir`` substituted) and
  it is stopped afterwards even when the block fails.

README.md's quickstart section is run by ``hack/readme-check`` on a fresh clone (CI runs it);
this test leaves it to that script.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from ansible_cli import BIN, REPO_ROOT, run_playbook
from local_cluster.cluster import LocalCluster
# The pages and the not-run marker (on the line right before a fence) are the YAML examples' own.
from test_examples import DOC_PAGES, NOT_RUN

SHELL_FENCE = re.compile(r"^```(sh|bash|shell|console)\n(.*?)^```", flags=re.S | re.M)
BLOCK_TIMEOUT = 600
TRACE = "+[example] "  # bash -x's prefix (PS4) for each command of a block


@dataclass
class ShellBlock:
    page: str
    line: int
    lang: str
    text: str
    not_run: str | None
    offset: int  # where the block starts in the page

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def shell_blocks(page: str) -> list[ShellBlock]:
    text = (REPO_ROOT / page).read_text()
    blocks = []
    for match in SHELL_FENCE.finditer(text):
        head = text[:match.start()]
        before = head.rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        blocks.append(ShellBlock(page, head.count("\n") + 1, match.group(1), match.group(2),
                                 reason.group(1) if reason else None, match.start()))
    return blocks


def run_by_readme_check(block: ShellBlock) -> bool:
    """hack/readme-check runs every ```sh block of README's '## Quickstart' section (not its subsections)
    on a fresh clone with a control plane of its own, and CI runs it: this test leaves them to it."""
    if block.page != "README.md":
        return False
    section = re.search(r"^## Quickstart\n(.*?)(?=^##)", (REPO_ROOT / "README.md").read_text(), flags=re.S | re.M)
    return section.start(1) <= block.offset < section.end(1)


def split_console(text: str) -> tuple[str, list[str]]:
    """(script, expected output lines) of a console block: `$ ` lines are commands."""
    commands, expected = [], []
    for line in text.splitlines():
        if line.startswith("$ "):
            commands.append(line[2:])
        elif commands and commands[-1].endswith("\\"):
            commands.append(line)
        elif line.strip() and line.strip() not in ("...", "…"):  # an elision of output lines
            # The doc's notes beside an output line are set off by two or more spaces.
            expected.append(re.split(r"\s{2,}(?=[a-z(])", line.rstrip())[0].rstrip())
    return "\n".join(commands) + "\n", expected


# ----- the repository copy and the environment -----------------------------------------------------------------

def repo_copy(dest: Path) -> Path:
    """The repository's files (tracked and new, as in the work tree) with the venv and the collection linked."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if not source.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    (dest / ".venv").symlink_to(Path(sys.prefix))
    link = dest / ".state" / "collections" / "ansible_collections" / "applyset" / "kubernetes"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("../../../..")
    return dest


@dataclass
class PageRun:
    """Where and how a page's blocks run, and what is substituted in them."""
    cwd: Path
    env: dict
    substitutions: list = field(default_factory=list)  # (as written, as run, why)
    transcript: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    def script(self, text: str) -> str:
        for old, new, _why in self.substitutions:
            text = text.replace(old, new)
        return text

    def run(self, block: ShellBlock) -> subprocess.CompletedProcess:
        if block.lang == "console":
            script, expected = split_console(block.text)
        else:
            script, expected = block.text, []
        script = self.script(script)
        started = time.monotonic()
        # -x traces each command (`+ command`) into the same stream, so its output can be told apart.
        # (PS4 set in the script: bash run as root does not take it from the environment)
        proc = subprocess.run(["bash", "-e", "-x", "-c", f"PS4='{TRACE}'\n{script}"], cwd=self.cwd, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=BLOCK_TIMEOUT)
        seconds = time.monotonic() - started
        self.transcript.append(f"{block.where} ({block.lang}, {seconds:.1f}s)")
        output = proc.stdout
        self.outputs.append(output)
        assert proc.returncode == 0, (f"{block.where} failed (exit {proc.returncode}):\n{script}\n"
                                      f"--- output ---\n{output[-8000:]}")
        missing = [line for line in expected if line not in output]
        assert not missing, f"{block.where}: the shown output lines {missing} are not in:\n{proc.stdout[-6000:]}"
        return proc

    def output_of(self, command: str) -> str:
        """What the last run of ``command`` printed (from its trace line to the next one)."""
        for output in reversed(self.outputs):
            parts = re.split(rf"^{re.escape(TRACE)}(.*)$", output, flags=re.M)
            found = [parts[i + 1] for i in range(1, len(parts) - 1, 2) if parts[i].strip() == command]
            if found:
                return found[-1]
        raise AssertionError(f"{command!r} did not run")


def base_env(cluster_kubeconfig: str, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("K8S_AUTH_", "ANSIBLE_", "APPLYSET_")) and k not in ("KUBECONFIG", "VIRTUAL_ENV")}
    env.update(KUBECONFIG=cluster_kubeconfig, HOME=str(home), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    # Caches that a changed HOME would otherwise send elsewhere (Go's module cache, the control plane's binaries).
    for name in ("GOPATH", "GOMODCACHE", "GOCACHE"):
        value = subprocess.run(["go", "env", name], capture_output=True, text=True).stdout.strip() \
            if shutil.which("go") else ""
        if value:
            env[name] = value
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    return env


@contextmanager
def own_control_plane(state_dir: Path):
    """A control plane of the test's own; stopped afterwards whatever happened."""
    local = LocalCluster(state_dir=state_dir)
    local.up(log=lambda msg: None)
    try:
        yield local
    finally:
        local.down(log=lambda msg: None)


@contextmanager
def stopped_afterwards(state_dir: Path):
    """For blocks that start a control plane themselves: stop it even when the block fails midway."""
    try:
        yield
    finally:
        subprocess.run([str(REPO_ROOT / "hack" / "local-cluster"), "--state-dir", str(state_dir), "down"],
                       capture_output=True, text=True, timeout=120)


def kubectl(env: dict, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def admin_token(env: dict, namespace: str, name: str) -> str:
    """A bearer token of a ServiceAccount bound to cluster-admin (what the page's credential stands for)."""
    kubectl(env, "create", "serviceaccount", name, "-n", namespace)
    kubectl(env, "create", "clusterrolebinding", f"{name}-admin", "--clusterrole=cluster-admin",
            f"--serviceaccount={namespace}:{name}")
    return kubectl(env, "create", "token", name, "-n", namespace, "--duration=1h").strip()


def yaml_block_after(page: str, first_line: str) -> str:
    """The text of the page's ```yaml block that begins with ``first_line``."""
    for match in re.finditer(r"^```yaml\n(.*?)^```", (REPO_ROOT / page).read_text(), flags=re.S | re.M):
        if match.group(1).startswith(first_line):
            return match.group(1)
    raise AssertionError(f"{page} has no yaml block starting with {first_line!r}")


# ----- what each page presupposes -------------------------------------------------------------------------------

@contextmanager
def readme_page(ctx):
    """'Against an existing cluster': ~/.kube/config, then the K8S_AUTH_* variables of a bearer token."""
    with own_control_plane(ctx.tmp / "cluster") as local:
        env = base_env(str(local.kubeconfig), ctx.home)
        (ctx.home / ".kube").mkdir(parents=True)
        shutil.copy(local.kubeconfig, ctx.home / ".kube" / "config")
        config = yaml.safe_load(Path(local.kubeconfig).read_text())
        (ctx.repo / "ca.crt").write_bytes(
            base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
        token = admin_token(env, "default", "readme-deployer")
        del env["KUBECONFIG"]  # each command of the block names its own connection
        yield PageRun(ctx.repo, env, [
            ("https://api.example.com:6443", local.server, "the page's API server: the test's own"),
            ("K8S_AUTH_API_KEY=...", f"K8S_AUTH_API_KEY={token}", "the page's placeholder token"),
        ])
        admin = base_env(str(local.kubeconfig), ctx.home)
        parent = json.loads(kubectl(admin, "get", "secret", "shop", "-n", "shop-demo", "-o", "json"))
        assert parent["metadata"]["labels"]["applyset.kubernetes.io/id"], parent


@contextmanager
def awx_page(ctx):
    """The token command: the page's ServiceAccount, in the test's namespace instead of awx."""
    env = base_env(ctx.cluster.kubeconfig, ctx.home)
    kubectl(env, "create", "serviceaccount", "shop-deployer", "-n", ctx.namespace)
    run = PageRun(ctx.repo, env, [("-n awx", f"-n {ctx.namespace}", "the page's namespace awx")])
    yield run
    token = run.output_of(f"kubectl create token shop-deployer -n {ctx.namespace} --duration=8760h").strip()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["sub"] == f"system:serviceaccount:{ctx.namespace}:shop-deployer", claims
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600, claims  # "valid for a year"


@contextmanager
def compatibility_page(ctx):
    yield PageRun(ctx.repo, base_env(ctx.cluster.kubeconfig, ctx.home))


@contextmanager
def fleet_page(ctx):
    """Three contexts named as on the page (clusters eu and us) on one control plane of the test's own.

    The page's inventory file (its yaml block) is written as fleet.kubeconfig.yml beside the playbooks,
    reading ~/.kube/fleet.yaml; playbooks/fleet.kubeconfig.yml reads KUBECONFIG, the same file.
    """
    with own_control_plane(ctx.tmp / "cluster") as local:
        config = yaml.safe_load(Path(local.kubeconfig).read_text())
        cluster, user = config["clusters"][0], config["users"][0]
        clusters = {"eu": "staging-eu-west prod-eu-west", "us": "prod-us-east"}
        fleet = {"apiVersion": "v1", "kind": "Config", "current-context": "staging-eu-west",
                 "clusters": [{"name": name, "cluster": cluster["cluster"]} for name in clusters],
                 "users": [user],
                 "contexts": [{"name": context, "context": {"cluster": name, "user": user["name"]}}
                              for name, contexts in clusters.items() for context in contexts.split()]}
        fleet_file = ctx.home / ".kube" / "fleet.yaml"
        fleet_file.parent.mkdir(parents=True)
        fleet_file.write_text(yaml.safe_dump(fleet))
        (ctx.repo / "fleet.kubeconfig.yml").write_text(yaml_block_after("docs/fleet.md", "# fleet.kubeconfig.yml"))
        env = base_env(str(fleet_file), ctx.home)
        yield PageRun(ctx.repo, env, [
            ("-i ... ", "-i playbooks/fleet.kubeconfig.yml ", "the page's elision of the inventory above"),
        ])
        for name in ("applyset-audit.json", "applyset-audit.md", "applyset-audit.html"):
            assert (ctx.repo / ".state" / "fleet-audit" / name).is_file(), f"no .state/fleet-audit/{name}"


@contextmanager
def kubectl_compatibility_page(ctx):
    """Handing a set back to kubectl: our set `shop` in the test's namespace, from manifests/shop/."""
    env = base_env(ctx.cluster.kubeconfig, ctx.home)
    shop = ctx.repo / "manifests" / "shop"
    shop.mkdir(parents=True)
    (shop / "settings.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-settings"}, "data": {"currency": "EUR"}}))
    setup = ctx.tmp / "setup.yml"
    setup.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"applyset.kubernetes.applyset_apply": {"parent": "shop", "namespace": ctx.namespace,
                                                "src": str(shop)}}]}]))
    proc = run_playbook(ctx.cluster, setup)
    assert proc.returncode == 0, proc.stdout[-3000:]
    run = PageRun(ctx.repo, env, [("-n shop ", f"-n {ctx.namespace} ", "the page's namespace shop")])
    yield run
    parent = ctx.kube.get(f"/api/v1/namespaces/{ctx.namespace}/secrets/shop")
    tooling = parent["metadata"]["annotations"]["applyset.kubernetes.io/tooling"]
    assert tooling.startswith("kubectl/"), f"kubectl does not own the set again: tooling {tooling}"
    # The page: kubectl warns once about the conflict on the parent, forces it, and owns the parent.
    output = run.outputs[-1]
    assert output.count("WARNING: failed to update ApplySet: Apply failed with 1 conflict") == 1, output
    assert "Retrying with conflicts forced." in output, output


@contextmanager
def performance_page(ctx):
    """The small reproduction: its runs start control planes of their own in the copy's .state/bench/cluster.

    `report --update-docs` from the committed results must give back this page's generated part and
    benchmarks/results/summary.md as committed: the published tables are what the results say.
    """
    committed = {name: (ctx.repo / name).read_bytes()
                 for name in ("docs/performance.md", "benchmarks/results/summary.md")}
    try:
        yield PageRun(ctx.repo, base_env(ctx.cluster.kubeconfig, ctx.home))
    finally:
        subprocess.run([str(REPO_ROOT / "hack" / "local-cluster"), "--state-dir",
                        str(ctx.repo / ".state" / "bench" / "cluster"), "down"], capture_output=True, timeout=120)
    for name, text in committed.items():
        assert (ctx.repo / name).read_bytes() == text, f"report --update-docs changes {name}: the page and its results differ"
    assert list((ctx.repo / "benchmarks" / "results").glob("profile-*-50-noop.txt")), "no profile written"


# The unit file whole, and one case of each kind from the two integration files (the corpus runs only
# the cases selected): the page's control plane, its kubeconfig and the files' selection are what this
# proves; the suite itself runs every case of these files.
SAFETY_SAMPLE = " or ".join([
    "test_bad_input_unit", "yaml-bad-indentation", "kind-in-wrong-apiversion", "parent-forged-id",
    "test_user_who_cannot_list_a_recorded_kind", "test_secret_values_are_masked_in_diff_and_results"])


@contextmanager
def safety_page(ctx):
    """The page's control plane of your own, in the test's temporary directory."""
    state_dir = ctx.tmp / "safety-cluster"
    as_written = "tests/integration/test_rbac_secrets.py -q -rxX"
    # Without the sample the block would run both integration files whole, past BLOCK_TIMEOUT.
    assert as_written in (ctx.repo / "docs" / "safety.md").read_text(), \
        f"docs/safety.md no longer runs `{as_written}`: say here which cases its example runs"
    with stopped_afterwards(state_dir):
        yield PageRun(ctx.repo, base_env(ctx.cluster.kubeconfig, ctx.home), [
            ("/tmp/safety-cluster", str(state_dir), "the page's state directory"),
            (as_written, f"{as_written} -k '{SAFETY_SAMPLE}'",
             "the suite runs these files in full; a few cases of each prove the page's commands"),
        ])


@contextmanager
def user_guide_page(ctx):
    """`make demo` starts the local control plane in APPLYSET_CLUSTER_DIR: a temporary one, never the default."""
    state_dir = ctx.tmp / "demo-cluster"
    env = base_env(ctx.cluster.kubeconfig, ctx.home)
    del env["KUBECONFIG"]  # the block points it at the control plane make demo starts
    env["APPLYSET_CLUSTER_DIR"] = str(state_dir)
    with stopped_afterwards(state_dir):
        run = PageRun(ctx.repo, env)
        yield run
    # What the comments say each step shows.
    # (preview.yml prints the summary as text, then one line per object and the plan id: docs/awx.md.)
    summaries = {command: re.findall(r"""["'](created|pruned)["']: (\d+)""", run.output_of(command)) for command in (
        "ansible-playbook playbooks/preview.yml", "ansible-playbook playbooks/preview.yml -e shop_without_banner=true")}
    assert ("created", "1") in summaries["ansible-playbook playbooks/preview.yml"], summaries  # the banner would come back
    assert ("pruned", "1") in summaries["ansible-playbook playbooks/preview.yml -e shop_without_banner=true"], summaries
    for name in ("applyset-audit.json", "applyset-audit.md"):
        assert (ctx.repo / ".state" / "audit" / name).is_file(), f"no .state/audit/{name}"


PAGES = {
    "README.md": readme_page,
    "docs/awx.md": awx_page,
    "docs/compatibility.md": compatibility_page,
    "docs/fleet.md": fleet_page,
    "docs/kubectl-compatibility.md": kubectl_compatibility_page,
    "docs/performance.md": performance_page,
    "docs/safety.md": safety_page,
    "docs/user-guide.md": user_guide_page,
}


def blocks_to_run(page: str) -> list[ShellBlock]:
    return [b for b in shell_blocks(page) if not b.not_run and not run_by_readme_check(b)]


@dataclass
class Context:
    cluster: object
    kube: object
    namespace: str
    tmp: Path
    repo: Path
    home: Path


@pytest.mark.parametrize("page", [p for p in DOC_PAGES if blocks_to_run(p)])
def test_the_shell_examples_of_each_page_run_in_order(cluster, kube, namespace, tmp_path, page):
    assert page in PAGES, f"{page} has shell examples: say in PAGES what they presuppose"
    home = tmp_path / "home"
    home.mkdir()
    ctx = Context(cluster, kube, namespace, tmp_path, repo_copy(tmp_path / "repo"), home)
    started = time.monotonic()
    with PAGES[page](ctx) as run:
        for block in blocks_to_run(page):
            run.run(block)
    print(f"\n{page}: {len(run.transcript)} blocks in {time.monotonic() - started:.0f}s: {run.transcript}")


def test_shell_examples_not_run_say_why_and_stay_rare():
    blocks = [b for page in DOC_PAGES for b in shell_blocks(page)]
    not_run = [f"{b.where}: {b.not_run}" for b in blocks if b.not_run]
    elsewhere = [f"{b.where}: run by hack/readme-check" for b in blocks if run_by_readme_check(b)]
    print(f"\n{len(blocks)} shell blocks; not run here:\n" + "\n".join(not_run + elsewhere))
    assert len(not_run) * 4 <= len(blocks), not_run  # rare: at most a quarter
    unknown = [page for page in DOC_PAGES if blocks_to_run(page) and page not in PAGES]
    assert not unknown, f"pages with shell examples to run: say in PAGES what they presuppose: {unknown}"
    assert all(b.lang != "console" or b.text.lstrip().startswith("$ ") for b in blocks), \
        "a console block starts with its first `$ ` command"
