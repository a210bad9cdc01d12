"""Where a release came from, as its revision records it (``revisions``): the collection version,
what the action plugin passed from the play (the task, the AWX job and user), and the git commit
of the ``src`` directory when it is in a git work tree.

The commit is read from the files under ``.git`` (HEAD, the ref it names, packed-refs); nothing
of the repository is run (no git command, no hook, no configuration).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .. import spec

# The play's variables an action plugin passes on (AWX sets awx_*, older Tower tower_*).
PLAY_KEYS = ("task", "playbook_dir", "awx_job_id", "awx_job_template_name", "awx_user_name", "tower_job_id",
             "tower_job_template_name", "tower_user_name")


def _git_dir(path: str) -> str | None:
    """The ``.git`` directory of the work tree holding ``path`` (a ``gitdir:`` file followed)."""
    current = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    while True:
        candidate = os.path.join(current, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as handle:
                text = handle.read().strip()
            if text.startswith("gitdir:"):
                found = text[len("gitdir:"):].strip()
                return found if os.path.isabs(found) else os.path.join(current, found)
            return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def git_commit(path: str) -> str | None:
    """The commit checked out in the git work tree holding ``path``, or None (not in one, or unreadable)."""
    git_dir = _git_dir(path)
    head = _read(os.path.join(git_dir, "HEAD")) if git_dir else None
    if not git_dir or not head:
        return None
    if not head.startswith("ref:"):
        return head
    ref = head[4:].strip()
    common = _read(os.path.join(git_dir, "commondir"))
    roots = [git_dir] + ([os.path.normpath(os.path.join(git_dir, common))] if common else [])
    for root in roots:
        value = _read(os.path.join(root, ref))
        if value:
            return value
        for line in (_read(os.path.join(root, "packed-refs")) or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref:
                return parts[0]
    return None


def gather(play: Mapping[str, object] | None, src: list[str] | None) -> dict[str, str]:
    """The provenance of a run: the collection version, the play's values (``PLAY_KEYS``, when
    given) and, for the first ``src`` entry in a git work tree, its commit."""
    found = {"collection_version": spec.COLLECTION_VERSION}
    found.update({key: str(value) for key, value in (play or {}).items() if key in PLAY_KEYS and value is not None})
    for entry in src or ():
        try:
            commit = git_commit(entry)
        except (OSError, UnicodeDecodeError):
            commit = None
        if commit:
            found["git_commit"] = commit
            break
    return found
