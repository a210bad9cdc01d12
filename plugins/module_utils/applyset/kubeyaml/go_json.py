"""What sigs.k8s.io/yaml and kubectl's JSON round trip make of values and keys.

kubectl converts each document to JSON, decodes it with integers kept as 64-bit integers, and
sends it again as JSON. So a float that is a whole number (``1e3``) reaches the server as the
integer ``1000``, an integer beyond 64 bits as a float, and NaN or infinity cannot be sent at
all; map keys that are not strings become strings (``1``, ``true``). ``to_json_value`` applies
the same to a value that was already parsed (a dict from a playbook).
"""

from __future__ import annotations

import decimal
import math
import struct

from .scalars import INT64_MAX, INT64_MIN, Uint64, YamlError


def json_number(value: int | float) -> int | float:
    """The number ``value`` as the server receives it from kubectl (after Go's JSON round trip).

    Whole floats become ints (Go writes 1000.0 as 1000, read back as an int64), ints beyond
    int64 become floats. NaN and infinity cannot be written as JSON: ``YamlError``.
    """
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise YamlError(f"json: unsupported value: {_go_float_name(value)}")
        if value.is_integer() and abs(value) < 1e21:
            # Go writes the shortest digits that give the float back, padded with zeros
            # (9.2e18 as 9200000000000000000); that text is read back as an int64 if it fits.
            whole = int(decimal.Decimal(repr(value)))
            if INT64_MIN <= whole <= INT64_MAX:
                return whole
        return value
    if INT64_MIN <= value <= INT64_MAX:
        return int(value)
    return float(value)


def _go_float_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def json_key(value: object) -> str:
    """The map key ``value`` (a resolved scalar) as sigs.k8s.io/yaml turns it into a JSON key (a string).

    Raises ``YamlError`` for the key types it refuses: null and integers beyond int64.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Uint64) or isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise YamlError(f"unsupported map key of type: uint64, key: {value}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float32_g(value)
    raise YamlError("unsupported map key of type: <nil> (a null key such as ~, null or an empty key)"
                    if value is None else f"unsupported map key of type: {type(value).__name__}")


def format_float32_g(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml formats float keys."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(1, 10):  # the shortest digits that give the float32 back
        text = f"{abs(single):.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == abs(single):
            break
    mantissa, _e, exponent_digits = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_digits)
    sign = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:  # %e form; Go writes at least two exponent digits
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def to_json_value(value: object, where: str = "value") -> object:
    """Normalise an already parsed ``value`` (a dict from a playbook) as kubectl's JSON would.

    Keys become strings (``json_key``), numbers what the server receives (``json_number``).
    Containers are copied only where something changes, so ready values come back as they
    are. Raises ``YamlError`` naming the path of a value that cannot be sent, from ``where``
    (``value``, ``the object``) down: ``the object.spec.x``.
    """
    if isinstance(value, dict):
        result = None
        for number, (key, item) in enumerate(value.items()):
            text = key if key.__class__ is str else _json_key_at(key, where)
            new = to_json_value(item, f"{where}.{text}")
            if result is None and (text is not key or new is not item):
                result = dict(list(value.items())[:number])  # the unchanged entries so far
            if result is not None:
                if text in result:
                    raise YamlError(f"{where}: two keys are both the JSON key {text!r} (e.g. 1 and \"1\")")
                result[text] = new
        return value if result is None else result
    if isinstance(value, list):
        items = [to_json_value(item, f"{where}[{number}]") for number, item in enumerate(value)]
        return value if all(new is old for new, old in zip(items, value)) else items
    if isinstance(value, tuple):
        return [to_json_value(item, f"{where}[{number}]") for number, item in enumerate(value)]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        try:
            sent = json_number(value)
        except YamlError as error:
            raise YamlError(f"{where}: {error}") from None
        return value if sent == value and type(sent) is type(value) else sent
    raise YamlError(f"{where}: a {type(value).__name__} cannot be sent as JSON")


def _json_key_at(key: object, where: str) -> str:
    try:
        return json_key(key)
    except YamlError as error:
        raise YamlError(f"{where}: {error}") from None
