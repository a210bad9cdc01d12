"""A member's body in the form the API server stores it, so that it compares like with like.

``nochange.contains`` compares the body we send with the live object strictly: a wrong
"unchanged" would leave drift in place for good. Some values are stored in another form than
they are sent, and would then differ on every run although nobody changed them: the member
written again each time, and its drift reported ``cluster_changed`` (a nightly drift check
alerting every night). ``as_stored`` rewrites the known cases the way the API server does:

- a Secret's ``stringData`` is merged into ``data`` (base64 of its UTF-8 text; a key in both
  takes the ``stringData`` value) and is never stored itself;
- ``metadata.creationTimestamp: null`` (generated manifests carry it) is dropped: the server
  always sets its own;
- resource quantities of the built-in kinds (``cpu: 1000m`` stored as ``"1"``, ``0.5`` as
  ``"500m"``, ``1024Mi`` as ``"1Gi"``) take the canonical form of apimachinery's
  ``resource.Quantity``. Custom resources store what they are given, so only built-in API groups
  are rewritten, at the fields whose Go type is a Quantity.

Zero values the server drops (``nochange.contains``) are the third case. Anything else is
compared as sent. Pure: no requests, no Ansible.
"""

from __future__ import annotations

import base64
import re
from typing import cast
from decimal import ROUND_UP, Decimal, InvalidOperation, localcontext

from ..object_meta import KubeObject

# (parent key, key) -> "map" or "one"; the parent is None at the top of the body.
QuantityFields = dict[tuple["str | None", str], str]

# (parent key, key) -> "map" (every value a Quantity) or "one" (the value is one), in built-in kinds.
_QUANTITY_FIELDS: QuantityFields = {
    ("resources", "limits"): "map", ("resources", "requests"): "map",  # containers, pods, PVCs
    ("spec", "overhead"): "map", ("overhead", "podFixed"): "map",  # Pod, RuntimeClass
    ("spec", "capacity"): "map", ("spec", "hard"): "map",  # PersistentVolume, ResourceQuota
    ("limits", "max"): "map", ("limits", "min"): "map", ("limits", "default"): "map",  # LimitRange
    ("limits", "defaultRequest"): "map", ("limits", "maxLimitRequestRatio"): "map",
    ("emptyDir", "sizeLimit"): "one", ("resourceFieldRef", "divisor"): "one",
}
# HorizontalPodAutoscaler metric targets: only in the autoscaling group ("target" is a common name).
_AUTOSCALING_FIELDS: QuantityFields = {("target", "averageValue"): "one", ("target", "value"): "one"}


def as_stored(body: KubeObject) -> KubeObject:
    """``body`` as the API server stores it, for the known cases above.

    Returns ``body`` itself when nothing changes (the common case costs no copy), else a new dict
    (``body`` is never changed in place).
    """
    meta = body.get("metadata")
    if isinstance(meta, dict) and "creationTimestamp" in meta and meta["creationTimestamp"] is None:
        # generated manifests carry creationTimestamp: null; the server always sets its own
        body = {**body, "metadata": {k: v for k, v in meta.items() if k != "creationTimestamp"}}
    api_version = body.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else None
    if group is None or not _built_in(group):
        return body
    if group == "" and body.get("kind") == "Secret" and isinstance(body.get("stringData"), dict):
        body = _string_data_merged(body)
    fields = {**_QUANTITY_FIELDS, **_AUTOSCALING_FIELDS} if group == "autoscaling" else _QUANTITY_FIELDS
    return cast(KubeObject, _quantities(body, None, fields))  # a dict comes back a dict


def _built_in(group: str) -> bool:
    # The API server's own groups: the core group, the short ones (apps, batch, policy...) and
    # *.k8s.io. Custom resources live in groups with a domain of their own.
    return group == "" or "." not in group or group.endswith(".k8s.io")


def _string_data_merged(body: KubeObject) -> KubeObject:
    data = dict(body.get("data") or {})
    for key, value in body["stringData"].items():
        if not isinstance(value, str):
            return body  # the server refuses it: leave it to the apply to say so
        data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
    stored = {k: v for k, v in body.items() if k != "stringData"}
    stored["data"] = data
    return stored


def _quantities(node: object, parent: str | None, fields: QuantityFields) -> object:
    """``node`` with the Quantity fields under it canonical; the same object when none changes."""
    if isinstance(node, list):
        items = [_quantities(item, parent, fields) for item in node]
        return node if all(a is b for a, b in zip(items, node)) else items
    if not isinstance(node, dict):
        return node
    changed = {}
    for key, value in node.items():
        shape = fields.get((parent, key))
        if shape == "one":
            new = canonical_quantity(value)
        elif shape == "map" and isinstance(value, dict):
            new = {k: canonical_quantity(v) for k, v in value.items()}
            new = value if new == value and all(type(new[k]) is type(value[k]) for k in value) else new
        else:
            new = _quantities(value, key, fields)
        if new is not value:
            changed[key] = new
    return {**node, **changed} if changed else node


_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: dict[str, int] = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}


def canonical_quantity(value: object) -> object:
    """``value`` in the canonical form of apimachinery's ``resource.Quantity`` (what the server
    stores and answers), or ``value`` itself when it is no quantity (the apply then refuses it).

    The suffix chooses the format: binary (``Ki``... ``Ei``), decimal exponent (``1e3``) or
    decimal SI (``m``, ``k``, ``M``..., none). A value finer than a nano-unit is rounded up. A
    binary value under 1024, or not a whole number, is written in decimal SI. Decimal values are
    written with the largest exponent (a multiple of 3) that keeps the number whole.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return value
    match = _QUANTITY.fullmatch(str(value).strip())
    if not match:
        return value
    sign, number, suffix = match.groups()
    with localcontext() as ctx:
        ctx.prec = 80
        try:
            amount = Decimal(sign + number)
        except InvalidOperation:
            return value
        if suffix in _BINARY:
            amount *= Decimal(1024) ** _BINARY[suffix]
        else:
            amount = amount.scaleb(int(suffix[1:]) if suffix[:1] in ("e", "E") and len(suffix) > 1 else _DECIMAL[suffix])
        places = amount.as_tuple().exponent  # an int: the amount is finite (a number matched above)
        amount = amount.quantize(Decimal("1e-9"), rounding=ROUND_UP) if isinstance(places, int) and places < -9 else amount
        binary = suffix in _BINARY and abs(amount) >= 1024 and amount == amount.to_integral_value()
        if binary:
            return _binary_form(int(amount))
        return _decimal_form(amount, exponent_form=len(suffix) > 1 and suffix[0] in "eE")


def _binary_form(amount: int) -> str:
    power = 0
    while amount % 1024 == 0 and power < 6:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_SUFFIX.get(power, '')}"


def _decimal_form(amount: Decimal, *, exponent_form: bool) -> str:
    if amount == 0:
        return "0"
    sign, digits, exponent = amount.normalize().as_tuple()
    exponent = cast(int, exponent)  # a finite non-zero amount: a number, not NaN's or infinity's letter
    mantissa = int("".join(map(str, digits)))
    extra = exponent % 3  # down to a multiple of 3, the mantissa stays whole
    mantissa, exponent = mantissa * 10 ** extra, exponent - extra
    text = ("-" if sign else "") + str(mantissa)
    if exponent == 0:
        return text
    if not exponent_form and exponent in _DECIMAL_SUFFIX:
        return text + _DECIMAL_SUFFIX[exponent]
    return f"{text}e{exponent}"
