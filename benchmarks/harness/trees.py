"""The collection tree under test (``--tree``): a snapshot of this work tree, the live tree, a commit
or a directory, linked where ansible-playbook finds the collection; and what a tree can do."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from harness.paths import BENCH_STATE, COLLECTIONS, ROOT

TREE = ROOT  # the collection tree under test (set by use_tree); the harness itself always runs from ROOT


def supports_reapply(tree: Path) -> bool:
    """Does this collection tree have the reapply option (issue 11)? Its Options say: in engine.py
    until issue 25, in options.py until issue 37, in run/options.py since."""
    core = tree / "plugins" / "module_utils" / "applyset"
    for name in ("run/options.py", "options.py", "engine.py"):
        try:
            if "\n    reapply: str" in (core / name).read_text():
                return True
        except OSError:
            continue
    return False


def describe_tree(spec_: str, tree: Path) -> dict:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "plugins"], capture_output=True,
                           text=True).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((tree / "plugins").rglob("*.py")):
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return {"spec": spec_, "path": str(tree), "repo_head": head,
            "plugins_dirty_at_start": bool(dirty) if spec_ in (".", "snapshot") else None,
            "plugins_sha256": digest.hexdigest()[:16]}


def use_tree(spec_: str) -> Path:
    """Point the ansible and core tools at a collection tree (a directory, or git:REV exported)."""
    global TREE
    if spec_.startswith("git:"):
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", spec_[4:]], capture_output=True, text=True,
                             check=True).stdout.strip()
        tree = BENCH_STATE / f"tree-{rev[:12]}"
        if not tree.exists():
            tmp = tree.with_suffix(".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
            tmp.rename(tree)
    elif spec_ == "snapshot":
        # The work tree as it is now, frozen for the whole run (others may edit it meanwhile).
        tree = BENCH_STATE / "tree-snapshot"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        for name in ("plugins", "meta", "galaxy.yml"):
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, tree / name)
    else:
        tree = Path(spec_).resolve() if spec_ != "." else ROOT
    TREE = tree
    link = COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(tree)
    return tree
