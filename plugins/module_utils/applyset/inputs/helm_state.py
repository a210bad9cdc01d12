"""Each run's own helm state (pure): where helm keeps its repository cache, repository list and
registry logins while a run renders a chart.

helm keeps them under the user's home (``HELM_CACHE_HOME``, ``HELM_CONFIG_HOME``,
``HELM_DATA_HOME``), which every run on the host shares: runs of many forks at once download into
the same cache and rewrite the same files (helm #30983). So every helm command of a run is given
a temporary directory of the run (``private_env``), removed at its end (steps.chart_render). What
the host has that a chart reference may need is copied in, never written back (``seeds``): the
repository list and registry logins (``helm repo add``, ``helm registry login`` done beforehand),
and the cached index of the one repository a ``repo/chart`` reference names. helm's plugins stay
the host's (``HELM_PLUGINS``): they are programs helm runs, not state it writes.
"""

from __future__ import annotations

import os
import re

# helm's state variables, each to its place in the run's directory (helm 4 adds the content cache;
# helm 3 ignores it).
PRIVATE_PATHS = {
    "HELM_CACHE_HOME": "cache",
    "HELM_CONFIG_HOME": "config",
    "HELM_DATA_HOME": "data",
    "HELM_REPOSITORY_CACHE": os.path.join("cache", "repository"),
    "HELM_CONTENT_CACHE": os.path.join("cache", "content"),
    "HELM_REPOSITORY_CONFIG": os.path.join("config", "repositories.yaml"),
    "HELM_REGISTRY_CONFIG": os.path.join("config", "registry", "config.json"),
    # client-go's discovery cache (~/.kube/cache), which helm 4 fills when it renders with the cluster
    # reachable: shared by forks the same way.
    "KUBECACHEDIR": os.path.join("cache", "kube"),
}

_ENV_LINE = re.compile(r'^(HELM_\w+)="(.*)"$', re.MULTILINE)


def parse_env(text: str) -> dict[str, str]:
    """``helm env``'s answer (``HELM_CACHE_HOME="/root/.cache/helm"`` lines) as a mapping."""
    return dict(_ENV_LINE.findall(text or ""))


def private_env(base: dict[str, str], root: str, host: dict[str, str]) -> dict[str, str]:
    """``base`` (the module's environment) with every helm state variable in ``root``; the host's
    plugins (``host``: its ``helm env``) kept, so that a plugin a repository needs still runs."""
    env = dict(base)
    env.update({name: os.path.join(root, path) for name, path in PRIVATE_PATHS.items()})
    if host.get("HELM_PLUGINS"):
        env["HELM_PLUGINS"] = host["HELM_PLUGINS"]
    return env


def seeds(chart_ref: str, has_repo: bool, host: dict[str, str], root: str) -> list[tuple[str, str]]:
    """``(host file, its place in root)`` of what is copied in before helm runs: the repository list
    and the registry logins, and for a ``repo/chart`` reference (a chart named by a repository the
    host added, without ``helm.repo``) that repository's cached index. Files the host lacks are left
    out by the caller."""
    copied = []
    for name in ("HELM_REPOSITORY_CONFIG", "HELM_REGISTRY_CONFIG"):
        if host.get(name):
            copied.append((host[name], os.path.join(root, PRIVATE_PATHS[name])))
    repo_name = named_repository(chart_ref, has_repo)
    if repo_name and host.get("HELM_REPOSITORY_CACHE"):
        for suffix in ("-index.yaml", "-charts.txt"):
            copied.append((os.path.join(host["HELM_REPOSITORY_CACHE"], repo_name + suffix),
                           os.path.join(root, PRIVATE_PATHS["HELM_REPOSITORY_CACHE"], repo_name + suffix)))
    return copied


def named_repository(chart_ref: str, has_repo: bool) -> str | None:
    """The repository a ``repo/chart`` reference names (helm's way when no such path exists), or None."""
    if has_repo or "://" in chart_ref or chart_ref.count("/") != 1 or os.path.exists(chart_ref):
        return None
    name = chart_ref.split("/", 1)[0]
    return name if name not in (".", "..", "") else None
