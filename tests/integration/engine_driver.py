"""Run one ApplySet apply in a process of its own (so a test can SIGKILL it mid-run).

Reads {"auth", "parent", "namespace", "definition", "options", "client", "history"} as JSON on
stdin and prints the report (or the error) as JSON on stdout.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.history import revisions as history  # noqa: E402
from applyset.kube import client as kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.errors import ApplySetError  # noqa: E402


def main() -> int:
    job = json.load(sys.stdin)
    client = kube.connect(job["auth"], **job.get("client", {}))
    options = dict(job.get("options", {}))
    if "history" in job:  # history.Settings keywords: the run keeps the set's history
        options["history"] = history.Settings(**job["history"])
    run = engine.Engine(client, job["parent"], job.get("namespace"), Options.from_settings(**options))
    # finished_at: when this run let go of the set, so that a test can tell which of two
    # concurrent runs wrote last (the order in which it reads their output says nothing).
    try:
        report = run.apply(manifests.load_definition(job["definition"]))
    except ApplySetError as err:
        partial = err.report.to_dict() if err.report is not None else {}
        print(json.dumps({"failed": True, "error": str(err), "finished_at": time.time(), **partial}))
        return 1
    print(json.dumps({"failed": False, "error": None, "finished_at": time.time(), **report.to_dict()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
