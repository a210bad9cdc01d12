"""When may a recorded kind leave the parent's hint? Only when it provably cannot hold objects.

A kind the server does not serve right now is not a kind without objects. A CRD whose only
version is set to ``served: false``, an aggregated APIService that is down (its discovery is
marked stale), a legacy ``contains-group-resources`` entry that discovery cannot map: in each
case objects of the set may still be stored, and dropping the kind from the hint would hide
them from every later prune for good. kubectl refuses such runs ("could not find mapping") and
keeps the hint; we keep the hint too (see docs/kubectl-compatibility.md, "ApplySet rules").

What proves that a kind holds nothing: no CustomResourceDefinition defines it (deleting a CRD
deletes every object of it first), no aggregated APIService serves its group, and its group is
not one the API server itself serves (the core group, or a group with a built-in APIService).
Anything we cannot check (the credentials cannot list CRDs or APIServices) counts as "may hold".

Pure decisions plus one loader; the loader only runs when a run finds an unserved recorded kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..object_meta import KubeObject, conditions_of, labels_of, metadata_of
from ..errors import ApiError
from ..kube.discovery import APISERVICE_RESOURCE, CRD_RESOURCE, Discovery, Resource
from ..kube.api import KubeApi
from ..spec import GroupKind

# kube-apiserver's autoregister controller labels the APIServices it makes: "onstart" for the
# server's own groups, "true" for the groups of CRDs (those are judged by the CRDs themselves).
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"


@dataclass
class ApiDefinitions:
    """The cluster's CRDs and APIServices, or why they could not be read (``None`` lists)."""

    crds: list[KubeObject] | None
    apiservices: list[KubeObject] | None
    crd_error: str | None = None
    apiservice_error: str | None = None

    def crd_for_kind(self, gk: GroupKind) -> KubeObject | None:
        """The CRD that defines the group and kind ``gk``, or None (also when CRDs could not be listed)."""
        for crd in self.crds or ():
            crd_spec = crd.get("spec") or {}
            if crd_spec.get("group") == gk.group and (crd_spec.get("names") or {}).get("kind") == gk.kind:
                return crd
        return None

    def crd_for_resource(self, group: str, resource: str) -> KubeObject | None:
        """The CRD of ``group`` whose plural, singular or a short name is ``resource`` (in any case),
        or None."""
        for crd in self.crds or ():
            crd_spec = crd.get("spec") or {}
            names = crd_spec.get("names") or {}
            if crd_spec.get("group") == group and resource.lower() in (
                    names.get("plural"), names.get("singular"), *(names.get("shortNames") or ())):
                return crd
        return None


def load(client: KubeApi, discovery: Discovery | None = None) -> ApiDefinitions:
    """LIST the CRDs and APIServices with ``client`` (whole objects: the kinds are in their spec).

    ``discovery``, when given, picks the served version of each. Never raises for an API error
    (forbidden, not served, no answer): that list is None and its error message kept, so that
    the decisions count it as "may hold".
    """

    def fetch(res: Resource) -> tuple[list[KubeObject] | None, str | None]:
        if discovery is not None:
            res = discovery.for_group_kind(res.group_kind) or res
        try:
            return list(client.list(res, metadata_only=False)), None
        except ApiError as err:
            return None, err.message

    crds, crd_error = fetch(CRD_RESOURCE)
    apiservices, apiservice_error = fetch(APISERVICE_RESOURCE)
    return ApiDefinitions(crds, apiservices, crd_error, apiservice_error)


def why_it_may_hold_objects(gk: GroupKind, defs: ApiDefinitions) -> str | None:
    """Why the unserved recorded kind ``gk`` may still hold objects, judged on ``defs``
    (``load``'s result); ``None`` when it provably cannot."""
    if not gk.group:
        return "it is in the core API group, which the API server itself serves"
    if defs.crds is None:
        return f"CustomResourceDefinitions could not be listed to prove it ({defs.crd_error})"
    crd = defs.crd_for_kind(gk)
    if crd is not None:
        return f"its CustomResourceDefinition {_crd_state(crd)}"
    return _why_group_may_hold_objects(gk.group, defs)


def why_resource_may_hold_objects(group: str, resource: str, defs: ApiDefinitions) -> str | None:
    """``why_it_may_hold_objects`` for a legacy ``contains-group-resources`` entry (``resource`` of
    ``group``) whose kind is unknown, judged on ``defs``; ``None`` when it provably holds nothing."""
    if not group:
        return "it is in the core API group, which the API server itself serves"
    if defs.crds is None:
        return f"CustomResourceDefinitions could not be listed to prove it ({defs.crd_error})"
    crd = defs.crd_for_resource(group, resource)
    if crd is not None:
        return f"its CustomResourceDefinition {_crd_state(crd)}"
    return _why_group_may_hold_objects(group, defs)


def _why_group_may_hold_objects(group: str, defs: ApiDefinitions) -> str | None:
    if defs.apiservices is None:
        return f"APIServices could not be listed to prove it ({defs.apiservice_error})"
    for svc in defs.apiservices:
        svc_spec = svc.get("spec") or {}
        if svc_spec.get("group") != group:
            continue
        meta = metadata_of(svc)
        if labels_of(svc).get(AUTOMANAGED_LABEL) == "true":
            continue  # registered for a CRD group: the CRDs above decide
        name = meta.get("name", group)
        if svc_spec.get("service"):
            return f"APIService {name} serves its group ({_availability(svc)})"
        return f"its group is served by the API server itself (APIService {name})"
    return None


def _crd_state(crd: KubeObject) -> str:
    name = metadata_of(crd).get("name", "?")
    versions = (crd.get("spec") or {}).get("versions") or []
    if metadata_of(crd).get("deletionTimestamp"):
        return f"{name} is being deleted"
    if versions and not any(v.get("served") for v in versions):
        return f"{name} exists but serves no version"
    return f"{name} exists"


def _availability(svc: KubeObject) -> str:
    for cond in conditions_of(svc):
        if cond.get("type") == "Available":
            state = "available" if cond.get("status") == "True" else "not available"
            return f"{state}: {cond.get('reason')}" if cond.get("reason") else state
    return "availability unknown"
