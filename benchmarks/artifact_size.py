#!/usr/bin/env python3
"""The size of a fleet preview's AWX artifacts (applyset_approved_plans), whole plans against plan
digests (issue 50): C clusters with N members each, every member a ConfigMap; the plans are made as
a preview makes them (rules/plan_id.py), the artifacts as the deploy role publishes them.

Usage: benchmarks/artifact_size.py [--clusters 100] [--members 1000]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "module_utils"))

from applyset.rules import plan_digests, plan_id as plans  # noqa: E402


def cluster_plan(members: int) -> list:
    """One cluster's plan: the set, a tenth of the members to configure, the rest unchanged."""
    entries = [{"object": "ApplySet Secret shop/shop", "action": "apply", "id": f"applyset-{secrets.token_urlsafe(32)}-v1"}]
    for i in range(members):
        fields = {"body": secrets.token_urlsafe(12)}
        if i % 10 == 0:
            fields["start"] = secrets.token_urlsafe(12)
        entries.append(plans.entry(f"ConfigMap shop/settings-{i:05d}", "configure" if i % 10 == 0 else "unchanged",
                                   **fields))
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--members", type=int, default=1000)
    args = parser.parse_args()
    whole, small = {}, {}
    for c in range(args.clusters):
        entries = cluster_plan(args.members)
        plan_id = plans.digest(entries)
        key = f"cluster-{c:03d}/shop/shop"
        whole[key] = {"plan_id": plan_id, "plan": entries, "omitted": {}}
        small[key] = plan_digests.published(plan_id, entries)
    for name, artifacts in (("whole plans (before)", whole), ("plan digests", small)):
        size = len(json.dumps({"applyset_approved_plans": artifacts}))
        print(f"{args.clusters} clusters x {args.members:,} members, {name}: {size:,} bytes "
              f"({size / args.clusters / (args.members + 1):.1f} per entry)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
