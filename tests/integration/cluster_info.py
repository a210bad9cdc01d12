"""What a test knows of the control plane it runs against (a module of its own, not conftest:
``tests/unit`` has conftest modules too, and which one ``import conftest`` finds depends on
which tests the session collected first)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from local_cluster.cluster import LocalCluster


@dataclass
class ClusterInfo:
    kubeconfig: str
    local: LocalCluster | None

    def env(self, **extra) -> dict[str, str]:
        """Environment for a child process (kubectl, ansible-playbook) aimed at this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_")}
        env["KUBECONFIG"] = self.kubeconfig
        env.update(extra)
        return env
