"""Step apply-chart-crds: the CRDs of a chart's ``crds/`` created (or, with ``CreateReplace``,
brought to the chart's) before anything else of the chart, outside the set (rules.chart_crds).

They are applied under the run's field manager without the set's part-of label, so no prune or
uninstall of any set deletes them, and every release of the chart shares them. The custom
resources of a CRD created here are members, applied after it (their applies wait for its
endpoint, as for a CRD of the set). Check mode sends dry runs.
"""

from __future__ import annotations

from .. import spec
from ..errors import ApiError, ApplySetError
from ..run.runner import RunContext


def apply_chart_crds(ctx: RunContext) -> None:
    """Apply the chart's CRDs that the policy says to (``ChartCrds.to_apply``), created first.

    Raises:
        ApplySetError: a CRD the server refused, naming it and the fix.
    """
    crds = ctx.chart_crds
    if not crds.to_apply:
        return
    res = ctx.discovery.for_group_kind(spec.CRD_KIND)
    if res is None:  # never: every API server since 1.16 serves them
        raise AssertionError("CustomResourceDefinitions are not served")
    opts = ctx.opts
    for manifest in crds.to_apply:
        try:
            ctx.client.apply(res, manifest.mapping, field_manager=opts.field_manager, force=manifest in crds.replace,
                             dry_run=opts.dry_run)
        except ApiError as err:
            raise ApplySetError(
                f"the chart's CRD {manifest.name} could not be applied: {err.message}", obj=f"{manifest.source}",
                fix="grant this user create and patch on customresourcedefinitions, or install the chart's CRDs "
                    "beforehand and set helm.crds: Skip") from err
