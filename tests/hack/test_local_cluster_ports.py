"""The local control plane starts again with new ports when one chosen was taken meanwhile
(hack/local_cluster/cluster.py: a component's bind failed, as kwok's did in a CI run)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

from local_cluster import cluster  # noqa: E402


def starting(tmp_path, monkeypatch, failures):
    """A LocalCluster whose components 'start' without a process: ``failures`` errors first."""
    monkeypatch.setattr(cluster, "ensure_binaries", lambda log: {})
    local = cluster.LocalCluster(state_dir=tmp_path / "state")
    tries = []

    def start_all(binaries, log):
        tries.append(sorted(p.name for p in local.state_dir.iterdir()))
        local.ports = {"apiserver": 6443}
        if len(tries) <= len(failures):
            raise failures[len(tries) - 1]

    monkeypatch.setattr(local, "_start_all", start_all)
    monkeypatch.setattr(local, "down", lambda log=print: None)
    return local, tries


def test_a_port_taken_meanwhile_starts_the_control_plane_again(tmp_path, monkeypatch):
    local, tries = starting(tmp_path, monkeypatch, [cluster.PortTaken("kwok exited (a port it needs is in use)")])
    said = []
    local.up(log=said.append)
    assert len(tries) == 2 and tries[1] == []  # the second start from an empty state directory
    assert "taken meanwhile" in said[0] and "ready at https://127.0.0.1:6443" in said[-1]


def test_a_port_taken_every_time_or_another_failure_is_raised(tmp_path, monkeypatch):
    taken = [cluster.PortTaken("kwok exited")] * cluster.PORT_RACE_ATTEMPTS
    local, tries = starting(tmp_path, monkeypatch, taken)
    with pytest.raises(cluster.PortTaken):
        local.up(log=lambda *_: None)
    assert len(tries) == cluster.PORT_RACE_ATTEMPTS
    local, tries = starting(tmp_path / "other", monkeypatch, [cluster.ClusterError("etcd exited")])
    with pytest.raises(cluster.ClusterError, match="etcd exited"):
        local.up(log=lambda *_: None)
    assert len(tries) == 1
