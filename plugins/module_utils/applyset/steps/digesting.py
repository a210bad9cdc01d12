"""The steps of config that rolls its workloads, after split-hooks and before the plan, on the
desired objects only (no request):

- versioning (every apply route): the ConfigMaps and Secrets marked versioned get a name per content
  and the workloads' references follow them (``inputs.versioned``); a set without one is left as given.
- config-digest (applyset_apply's ``config_digest`` option, only with it): the pod templates of the
  set's workloads get the digest of the ConfigMaps and Secrets of the set they reference
  (``inputs.config_digest``), so a changed one rolls them."""

from __future__ import annotations

from dataclasses import replace

from ..inputs import config_digest, versioned
from ..object_meta import metadata_of
from ..rules.hooks import HookSet
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


def version(ctx: RunContext) -> None:
    """Step versioning: ``ctx.desired`` with each versioned ConfigMap and Secret renamed by its content
    and the set's pod templates pointed at the new names, the hooks' (a hook Job reading a versioned
    ConfigMap) as the members'."""
    namespace = ctx.namespace or ctx.parent.namespace or None
    ctx.desired, renames = versioned.version(ctx.desired, namespace, ctx.apply_options.versioned)
    if renames and ctx.has("hooks"):
        ctx.hooks = _hooks_following(ctx.hooks, renames, namespace)


def _hooks_following(hooks: HookSet, renames: versioned.Renames, namespace: str | None) -> HookSet:
    """``hooks`` with each hook's pod template pointed at the versioned names (copies of those that change)."""
    changed = []
    for hook in hooks.hooks:
        desired = hook.desired
        body = versioned.rewritten_body(desired.body, desired.resource.group_kind,
                                        renames, metadata_of(desired.body).get("namespace") or namespace)
        changed.append(hook if body is None else replace(hook, desired=replace(desired, body=body)))
    return replace(hooks, hooks=tuple(changed))


VERSIONING = Step("versioning", version, DECIDE, reads="desired parent", may_read="hooks", sets="desired hooks")
