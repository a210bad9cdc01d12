"""Step config-digest (applyset_apply's ``config_digest`` option): the pod templates of the set's
workloads get the digest of the ConfigMaps and Secrets of the set they reference
(``inputs.config_digest``), so a changed one rolls them. It runs after split-hooks and before the
plan, on the desired objects only: no request, and a route without the option does not have it."""

from __future__ import annotations

from ..inputs import config_digest
from ..run.options import Options, RunOptions
from ..run.runner import DECIDE, RunContext, Step


def digests_config(opts: RunOptions) -> bool:
    """Whether a run with ``opts`` annotates pod templates with the config digest."""
    return isinstance(opts, Options) and opts.config_digest


def annotate(ctx: RunContext) -> None:
    """Step config-digest: ``ctx.desired`` with the digest on each workload that references a
    ConfigMap or Secret of the set."""
    ctx.desired, _annotated = config_digest.annotate(ctx.desired, ctx.namespace or ctx.parent.namespace or None)


CONFIG_DIGEST = Step("config-digest", annotate, DECIDE, reads="desired parent", sets="desired")
