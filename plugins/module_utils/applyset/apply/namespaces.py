"""The namespaces a run writes into: checked before the first write, created when asked.

``check`` GETs each namespace the run writes into and does not create itself, so that a
missing one is refused up front, with a fix, instead of surfacing as the parent write's 404 or
as one failure per member after other writes. ``create_namespace: true`` makes the parent's
namespace (or the members' default one) without taking it into the set, as
``helm --create-namespace`` does; a set that defines its parent's Namespace gets it applied
before the parent, which cannot be created before its namespace exists.
"""

from __future__ import annotations

from ..object_meta import metadata_of, uid_of
from ..kube.api import KubeApi
from .. import spec
from ..errors import ApiError, NamespaceMissingError
from ..run.report import Change, MemberOutcome, ObjectResult
from ..kube.discovery import Discovery
from ..parent.model import Parent
from ..rules.plan import Plan
from ..run.options import Options
from ..spec import ObjectId

_CREATED_REASON = "create_namespace: true; not a member of the set, so state=absent leaves it"


def home(parent: Parent, namespace: str | None) -> str | None:
    """The namespace create_namespace makes: the ``parent``'s, else the default one of members
    (the run's ``namespace``)."""
    return parent.namespace or namespace or None


def check(client: KubeApi, discovery: Discovery, parent: Parent, namespace: str | None, opts: Options, plan: Plan,
          unchanged: dict[ObjectId, str | None]) -> str | None:
    """One GET per namespace that this run writes into and does not create itself.

    A GET that is refused (credentials limited to a namespace) tells nothing; the writes then
    report what they meet. A namespace whose members are all skipped (``unchanged``) gets no
    write, so no GET: a re-run costs its LISTs alone.

    Returns:
        The namespace that ``create_namespace`` makes (missing now), or None.

    Raises:
        NamespaceMissingError: namespaces missing or being deleted, naming who needs them.
    """
    made_by_set = {m.name for m in plan.members if m.resource.group_kind == spec.NAMESPACE_KIND}
    needed = {m.namespace for m in plan.members if m.resource.namespaced and m.namespace and m.key not in unchanged}
    if parent.namespace and not parent.exists:
        needed.add(parent.namespace)
    made_home = home(parent, namespace)
    if opts.create_namespace and made_home:
        needed.add(made_home)
    if parent.exists and parent.namespace:
        needed.discard(parent.namespace)  # the parent lives there
    names = sorted(needed - made_by_set)
    ns_res = discovery.for_group_kind(spec.NAMESPACE_KIND) if names else None
    if ns_res is None:
        return None
    found = client.map(lambda name: client.get(ns_res, name), names)
    missing = [n for n, obj in zip(names, found) if obj is None]
    terminating = [n for n, obj in zip(names, found)
                   if isinstance(obj, dict) and metadata_of(obj).get("deletionTimestamp")]
    to_create = None
    if opts.create_namespace and made_home in missing:
        missing.remove(made_home)
        to_create = made_home
    if missing or terminating:
        raise _missing_error(parent, plan, missing, terminating, made_home)
    return to_create


def _missing_error(parent: Parent, plan: Plan, missing: list[str], terminating: list[str],
                   made_home: str | None) -> NamespaceMissingError:
    users: dict[str, list[str]] = {}
    for m in plan.members:
        if m.namespace in missing or m.namespace in terminating:
            users.setdefault(m.namespace, []).append(m.ref)
    parts = []
    for name in missing + terminating:
        who = users.get(name, [])
        if name == parent.namespace and not parent.exists:
            who = [f"the parent {parent.ref}"] + who
        notes = []
        if name in missing:
            # The server's own words too, as kubectl shows them: people search for them.
            notes.append(f'namespaces "{name}" not found')
        if who:
            notes.append("needed by " + ", ".join(who[:3]) + (f" and {len(who) - 3} more" if len(who) > 3 else ""))
        state = "does not exist" if name in missing else "is being deleted"
        parts.append(f"namespace {name} {state}" + (f" ({'; '.join(notes)})" if notes else ""))
    return NamespaceMissingError(
        "; ".join(parts), obj=parent.set_ref, fix=", or ".join(_fixes(missing, terminating, made_home))
        + "; nothing was changed", details={"missing": missing, "terminating": terminating})


def _fixes(missing: list[str], terminating: list[str], made_home: str | None) -> list[str]:
    fixes = []
    if missing:
        fixes.append("add a Namespace object for " + ", ".join(missing) + " to the set (it is then "
                     "created first, and a later prune of it is guarded)")
        if made_home in missing:
            fixes.append(f"set create_namespace: true to create {made_home} as helm --create-namespace does "
                         "(it stays out of the set)")
        else:
            fixes.append("create it beforehand")
    if terminating:
        fixes.append("wait until " + ", ".join(terminating) + " is gone and run again")
    return fixes


def create(client: KubeApi, discovery: Discovery, opts: Options, name: str) -> MemberOutcome:
    """create_namespace: the namespace is made (a dry run in check mode), but does not join the set.

    As with helm --create-namespace, uninstall leaves it: it may hold what other tools put
    there (Secrets, PVCs), and as a member its removal from the set would be a prune the
    guard refuses anyway. Applied without the part-of label, so it is never a prune candidate.
    """
    res = discovery.for_group_kind(spec.NAMESPACE_KIND)
    if res is None:  # never: every API server serves them
        raise AssertionError("Namespaces are not served")
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    try:
        resp = client.apply(res, body, field_manager=opts.field_manager, dry_run=opts.dry_run)
    except ApiError as err:
        return MemberOutcome(ObjectResult(api_version="v1", kind="Namespace", namespace=None, name=name,
                                          action="failed", reason=err.message, error=err.to_dict()))
    result = ObjectResult(api_version="v1", kind="Namespace", namespace=None, name=name, action="created",
                          reason=_CREATED_REASON, uid=None if opts.dry_run else uid_of(resp.body))
    return MemberOutcome(result, [Change(f"Namespace {name}", None, resp.body)])


def refusal_fix(result: ObjectResult) -> str:
    """How to get past a refused Namespace creation (``result``: its failed ``ObjectResult``), by
    what the server named: an admission webhook or policy, the credentials (401, 403), or else
    what the server said."""
    text, status = result.reason or "", (result.error or {}).get("status")
    if "admission webhook" in text or "AdmissionPolicy" in text or "denied request" in text:
        return ("an admission webhook or policy refused the namespace (named above): ask its owner to allow "
                "it, or create the namespace beforehand; nothing else was changed")
    if status in (401, 403):
        return "the credentials need create on namespaces; or create it beforehand; nothing else was changed"
    return "fix what the server said, or create the namespace beforehand; nothing else was changed"
