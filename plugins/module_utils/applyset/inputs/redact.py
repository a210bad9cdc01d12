# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Keep secrets out of task output by structure, never by replacing text.

Ansible's ``no_log_values`` replaces a value wherever its text appears in the output. For
Secret data that is wrong: ``postgres`` or ``x`` as a Secret value would turn a Deployment's
name, ``apps/v1`` or "Fix:" into ``********``. So Secret data is kept out in three ways
(docs/secrets.md tells the whole story):

* the input that can hold Secret data (``definition``, an inline ``kubeconfig``) travels from
  the action plugin to the module inside one ``no_log`` parameter, as one JSON text
  (``pack_protected_input``/``unpack_protected_input``); Ansible then masks only that whole
  text, which no output ever contains, and shows neither the input in the invocation nor in
  the syslog/journal line;
* every result is passed through ``hide_secret_data``, which replaces the ``data`` and
  ``stringData`` values of anything shaped like a Secret, wherever it sits in the result;
* the secrets of an inline kubeconfig (tokens, passwords, private keys: long random strings)
  are the only values given to ``no_log_values``, and only when long enough
  (``kubeconfig_secrets``).

No Ansible imports here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..object_meta import KubeObject

# The name of the module parameter the action plugin fills (hidden: it starts with "_").
PROTECTED_INPUT = "_protected_input"

# Inputs that travel in the protected parameter instead of as visible parameters.
_PROTECTED_KEYS = ("definition", "kubeconfig", "src_contents", "helm_values", "helm_set_values")

HIDDEN = "<hidden>"
# What the engine's diff writes: a keyed digest, so equal values stay visibly equal.
_ALREADY_HIDDEN = re.compile(r"<hidden(?: [0-9a-f]{12})?>")

# Shorter values are never handed to no_log_values: Ansible would mask every occurrence of
# their text in the whole output, and a short value (a user name such as "admin", a word) is
# far more likely to be an ordinary word there than a credential. Real credentials (tokens,
# private keys, generated passwords) are much longer than this.
MIN_MASKED_LENGTH = 8

# Kubeconfig ``user`` fields that hold a credential by value.
_USER_SECRET_FIELDS = ("token", "password", "client-key-data")

# tokenFile contents are read for masking only when the file is small (a token is).
_MAX_TOKEN_FILE_BYTES = 64 * 1024

# The module's arguments as Ansible hands them over (each option's value as the task gave it).
ModuleArgs = dict[str, Any]


def pack_protected_input(args: ModuleArgs, src_contents: Mapping[str, bytes] | None = None) -> ModuleArgs:
    """Move ``definition``, an inline (dict) ``kubeconfig``, ``helm.values`` and ``helm.set_values`` out of ``args`` into one JSON text.

    ``src_contents`` (real path of a ``src`` file: its bytes, decrypted from Ansible Vault on
    the controller) travels in the same text, base64-encoded. Returns a new dict of arguments.
    A ``kubeconfig`` given as a path stays a visible parameter: a path is not a secret and users
    want to see which file was used.
    """
    args = dict(args)
    protected: dict[str, object] = {}
    if "definition" in args:
        protected["definition"] = args.pop("definition")
    if isinstance(args.get("kubeconfig"), dict):
        protected["kubeconfig"] = args.pop("kubeconfig")
    for key in ("values", "set_values"):
        if isinstance(args.get("helm"), dict) and args["helm"].get(key):
            # A chart's values may hold passwords: they travel here, not in the visible helm option.
            helm = dict(args["helm"])
            protected[f"helm_{key}"] = helm.pop(key)
            args["helm"] = helm
    if src_contents:
        protected["src_contents"] = {path: base64.b64encode(data).decode("ascii")
                                     for path, data in src_contents.items()}
    if protected:
        args[PROTECTED_INPUT] = json.dumps(protected, sort_keys=True)
    return args


def unpack_protected_input(text: str | None) -> dict[str, Any]:  # each carried input as given (decoded JSON)
    """The inputs ``pack_protected_input`` carried in ``text``, as a dict (empty when there were none);
    ``src_contents`` maps paths to bytes again.

    Raises ``ValueError`` (JSON's, base64's or ours) when ``text`` is not what
    ``pack_protected_input`` makes: the parameter is internal, so that is a broken action plugin,
    not bad input.
    """
    if not text:
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{PROTECTED_INPUT} must hold a JSON object")
    carried = {key: value[key] for key in _PROTECTED_KEYS if key in value}
    if "src_contents" in carried:
        carried["src_contents"] = {path: base64.b64decode(data, validate=True)
                                   for path, data in carried["src_contents"].items()}
    return carried


def is_secret(obj: object) -> bool:
    """Whether ``obj`` is a dict shaped like a core/v1 Secret with ``data`` or ``stringData`` (a
    missing apiVersion counts: better safe)."""
    return (isinstance(obj, dict) and obj.get("kind") == "Secret"
            and obj.get("apiVersion") in (None, "v1")
            and any(isinstance(obj.get(field), dict) for field in ("data", "stringData")))


def _hide_values(content: Mapping[str, object]) -> dict[str, object]:
    # Values hidden already (the engine's diff keeps equal values visibly equal with a
    # keyed digest, "<hidden 3782cbe9f9e2>") stay as they are.
    return {key: value if isinstance(value, str) and _ALREADY_HIDDEN.fullmatch(value) else HIDDEN
            for key, value in content.items()}


def hide_secret_data(value: object) -> Any:  # JSON of the same shape as ``value`` (a tuple comes back a list)
    """A copy of ``value`` where every Secret's ``data`` and ``stringData`` values are hidden.

    Works on any JSON-like structure (results, diffs, lists of objects); keys stay visible,
    so a reader still sees which keys a Secret has. Strings are never searched or changed.
    """
    if isinstance(value, dict):
        hidden = {key: hide_secret_data(item) for key, item in value.items()}
        if is_secret(value):
            for field in ("data", "stringData"):
                if isinstance(value.get(field), dict):
                    hidden[field] = _hide_values(value[field])
        return hidden
    if isinstance(value, (list, tuple)):
        return [hide_secret_data(item) for item in value]
    return value


class SecretDigester:
    """For diffs: a Secret's values become a keyed digest, so equal values stay visibly equal
    within one run (a diff can show that a value changed) while nothing about a value can be
    recovered from the output. The key is random per run."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(16)

    def mask(self, obj: KubeObject | None) -> KubeObject | None:
        """A copy of ``obj`` with each ``data`` and ``stringData`` value a digest, if it is a Secret
        (see ``is_secret``); anything else (None included) is returned as it is."""
        if obj is None or not is_secret(obj):
            return obj
        masked = dict(obj)
        for field in ("data", "stringData"):
            if isinstance(obj.get(field), dict):
                masked[field] = {key: self._digest(value) for key, value in obj[field].items()}
        return masked

    def _digest(self, value: object) -> str:
        digest = hashlib.blake2b(str(value).encode(), key=self._key, digest_size=6).hexdigest()
        return f"<hidden {digest}>"


def leaves(value: object) -> Iterator[object]:
    """Every scalar in ``value``: itself, or the values of its mappings and lists, at any depth."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def _strings(value: object) -> Iterator[str]:
    return (leaf for leaf in leaves(value) if isinstance(leaf, str))


def _read_token_file(path: str) -> str | None:
    try:
        path = os.path.expanduser(path)
        if os.path.getsize(path) > _MAX_TOKEN_FILE_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def kubeconfig_secrets(config: object) -> set[str]:
    """Every credential the inline kubeconfig ``config`` (a mapping) holds by value, for ``no_log_values``.

    ``token``, ``password``, ``client-key-data``, every value of an auth-provider's
    ``config`` (id and refresh tokens, client secrets), every ``env`` value of an exec
    plugin, and the content of a ``tokenFile`` that can be read here. Values shorter than
    ``MIN_MASKED_LENGTH`` are left out (see there why).
    """
    found: set[str] = set()
    users = config.get("users") if isinstance(config, dict) else None
    for entry in users if isinstance(users, list) else ():
        user = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        for field in _USER_SECRET_FIELDS:
            found.update(_strings(user.get(field)))
        provider = user.get("auth-provider")
        if isinstance(provider, dict):
            found.update(_strings(provider.get("config")))
        exec_config = user.get("exec")
        if isinstance(exec_config, dict) and isinstance(exec_config.get("env"), list):
            for env in exec_config["env"]:
                if isinstance(env, dict):
                    found.update(_strings(env.get("value")))
        token_file = user.get("tokenFile")
        if isinstance(token_file, str) and token_file:
            content = _read_token_file(token_file)
            if content:
                found.add(content)
    return maskable(found)


def pasted_private_key(value: object) -> set[str]:
    """What to mask when ``value`` (a ``client_key`` option) is a private key given by content where
    a path was expected: the text and each of its lines but the ``-----BEGIN/END`` ones. Empty for
    anything else."""
    if not isinstance(value, str) or "PRIVATE KEY" not in value:
        return set()
    return maskable({value, value.strip(), *value.splitlines()}) - {
        line for line in value.splitlines() if line.startswith("-----")}


def maskable(values: Iterable[object]) -> set[str]:
    """Those of ``values`` long enough to be masked wherever their text appears (``MIN_MASKED_LENGTH``)."""
    return {value for value in values if isinstance(value, str) and len(value.strip()) >= MIN_MASKED_LENGTH}
