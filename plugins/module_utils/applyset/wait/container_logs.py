"""What the failing containers printed last: the tail of their logs, for the result of a failed wait.

When a wait, a gate or a hook fails on a Job, a workload or a Pod, ``reasons.explain`` has found
its pods and the containers that are not well (waiting with a reason, terminated with an error,
restarted). For each of those, at most ``MAX_CONTAINERS`` in one failure, this reads the last
``TAIL_LINES`` lines (at most ``LIMIT_BYTES``) of its log with
``GET /api/v1/namespaces/N/pods/P/log?container=C&tailLines=..&limitBytes=..``; with
``previous=true`` when the container has restarted and is not running now (CrashLoopBackOff:
the current one has printed nothing yet, the one that crashed is the one to read), as kapp's
deploy logs and ``kubectl logs --previous`` do.

A log is a hint, never a second error: when it cannot be read (not allowed on ``pods/log``; no
node or kubelet to serve it; the container gone), the container gets a short note instead. Each
line is cut to ``MAX_LINE`` characters with control characters (terminal colours) removed; the
module's result masking then applies to the lines as to the rest of the result.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from ..kube.api import KubeApi
from ..errors import ApiError, ApplySetError

MAX_CONTAINERS = 3
TAIL_LINES = 20
LIMIT_BYTES = 4096
MAX_LINE = 300
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


class LogTail(TypedDict, total=False):
    """What ``read_tail`` found: the ``log`` lines and whether they are the ``previous`` container's,
    or why the log could not be read (``log_unavailable``)."""

    log: list[str]
    previous: bool
    log_unavailable: str


def log_request_query(container: str, previous: bool) -> dict[str, str]:
    """The query of one bounded log read (the request's shape, tested on its own)."""
    query = {"container": container, "tailLines": str(TAIL_LINES), "limitBytes": str(LIMIT_BYTES)}
    if previous:
        query["previous"] = "true"
    return query


def wants_previous(container_status: dict[str, Any]) -> bool:
    """Whether the log to read is the previous container's: it restarted, and is not running now."""
    state = container_status.get("state") or {}
    return bool(container_status.get("restartCount")) and "running" not in state


def read_tail(client: KubeApi, namespace: str, pod: str, container: str, previous: bool) -> LogTail:
    """``{"log": [lines], "previous": bool}``, or ``{"log_unavailable": why}`` when it cannot be read."""
    try:
        body = client.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
                              query=log_request_query(container, previous), accept="*/*").body
    except ApiError as err:
        why = "not allowed (needs get on pods/log)" if err.status in (401, 403) else _cut(err.message)
        return {"log_unavailable": why}
    except ApplySetError as err:  # no answer: a hint lost, not a failure
        return {"log_unavailable": _cut(err.message)}
    if body is None:
        return {"log": [], "previous": previous}
    # The client decodes a body that parses as JSON (a one-line log of JSON, or a number): as text again.
    text = body if isinstance(body, str) else json.dumps(body)
    return {"log": tail_lines(text), "previous": previous}


def tail_lines(text: str) -> list[str]:
    """The last ``TAIL_LINES`` non-empty lines of ``text``, each cleaned and cut; the first may be
    partial when ``limitBytes`` cut it, and is dropped then."""
    lines = [_CONTROL.sub("", line) for line in text.splitlines()]
    if len(text.encode("utf-8", "replace")) >= LIMIT_BYTES and len(lines) > 1:
        lines = lines[1:]
    return [_cut(line) for line in lines if line.strip()][-TAIL_LINES:]


def _cut(text: object) -> str:
    text = str(text or "")
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 3] + "..."
