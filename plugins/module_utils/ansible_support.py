# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Glue between Ansible modules and the Ansible-free core (``module_utils/applyset``).

This is the only module_utils file besides the modules themselves that imports Ansible.
It holds:

* ``AUTH_ARG_SPEC``: the argument spec that matches ``plugins/doc_fragments/auth.py``,
  with the kubernetes.core-compatible ``K8S_AUTH_*`` environment fallbacks;
* ``auth_params()``: picks the authentication options out of ``module.params`` in the
  plain-dict shape the core's connection builder takes;
* ``fail_from_error()`` and ``warn_all()``: result shaping for core errors and warnings;
* ``protected_input_spec()`` and ``protected_input()``: the hidden ``no_log`` parameter in which
  the action plugins pass ``definition`` and an inline ``kubeconfig`` (docs/secrets.md);
* ``module_argument_spec()``, ``start()``, ``check_names()`` and ``connect()``: the start the three
  modules share, before their first request;
* ``options_from()``: a module's parameters as the keywords of the core's ``Options``, by a table.

Of the core package, only ``inputs.redact`` (the protected input) is imported at load time
(``connect`` and ``check_names`` import what the modules have imported already): errors and
warnings are handled by duck typing, so this file stays importable (and testable) without the rest.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible.module_utils.common.parameters import env_fallback

# Standard library only: importing it keeps this file importable on its own.
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import redact


# Environment variables read for each option, in order of preference. Where
# kubernetes.core reads two names (``K8S_AUTH_<OPTION>`` first, then the name of the
# matching kubernetes-client setting, see its ``module_utils/k8s/client.py``), both are
# listed in the same order, so a drop-in environment resolves to the same value.
AUTH_ENV_VARS = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "api_key": ("K8S_AUTH_API_KEY",),
    "validate_certs": ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"),
    "ca_cert": ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"),
    "client_cert": ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"),
    "client_key": ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"),
    "proxy": ("K8S_AUTH_PROXY",),
    "no_proxy": ("K8S_AUTH_NO_PROXY",),
    "impersonate_user": ("K8S_AUTH_IMPERSONATE_USER",),
    "impersonate_groups": ("K8S_AUTH_IMPERSONATE_GROUPS",),
}


def _fallback(option):
    return (env_fallback, list(AUTH_ENV_VARS[option]))


# Must match plugins/doc_fragments/auth.py option for option (names, types, aliases).
AUTH_ARG_SPEC = {
    "kubeconfig": {"type": "raw", "fallback": _fallback("kubeconfig")},
    "context": {"type": "str", "fallback": _fallback("context")},
    "host": {"type": "str", "fallback": _fallback("host")},
    "api_key": {"type": "str", "no_log": True, "fallback": _fallback("api_key")},
    "validate_certs": {
        "type": "bool",
        "aliases": ["verify_ssl"],
        "fallback": _fallback("validate_certs"),
    },
    "ca_cert": {
        "type": "path",
        "aliases": ["ssl_ca_cert"],
        "fallback": _fallback("ca_cert"),
    },
    "client_cert": {
        "type": "path",
        "aliases": ["cert_file"],
        "fallback": _fallback("client_cert"),
    },
    # A path, not a secret: no no_log (the key's content is never a module parameter).
    "client_key": {
        "type": "path",
        "aliases": ["key_file"],
        "fallback": _fallback("client_key"),
    },
    "proxy": {"type": "str", "fallback": _fallback("proxy")},
    "no_proxy": {"type": "str", "fallback": _fallback("no_proxy")},
    "impersonate_user": {"type": "str", "fallback": _fallback("impersonate_user")},
    "impersonate_groups": {
        "type": "list",
        "elements": "str",
        "fallback": _fallback("impersonate_groups"),
    },
}

AUTH_OPTIONS = tuple(AUTH_ARG_SPEC)


def auth_arg_spec():
    """Return a deep copy of ``AUTH_ARG_SPEC`` for a module to extend safely."""
    return copy.deepcopy(AUTH_ARG_SPEC)


def auth_params(module_params):
    """Pick the authentication options out of a module's parameters, for ``kube.connect``.

    Args:
        module_params: ``module.params`` of an ``AnsibleModule`` built with ``AUTH_ARG_SPEC``: aliases
            are resolved, the ``K8S_AUTH_*`` fallbacks applied and the types converted already.

    Returns:
        A dict keyed by the option names of ``AUTH_ARG_SPEC`` (not the kubernetes-client names) with
        only the options that are set: "key absent" means "not given" to the core's connection
        builder, and an empty string counts as unset. ``impersonate_groups`` has its items stripped
        and blanks dropped (``K8S_AUTH_IMPERSONATE_GROUPS="a, b"`` arrives as ``["a", " b"]``); a
        trailing ``/`` on ``host`` is removed, as kubernetes.core does.
    """
    result = {}
    for name in AUTH_OPTIONS:
        value = module_params.get(name)
        if value is None or value == "":
            continue
        if name == "impersonate_groups":
            value = [group for group in (str(item).strip() for item in value) if group]
            if not value:
                continue
        elif name == "host":
            value = value.rstrip("/")
        result[name] = value
    return result


def _error_dict(err):
    """Structured form of a core error; falls back to attributes for other exceptions."""
    to_dict = getattr(err, "to_dict", None)
    if callable(to_dict):
        try:
            data = to_dict()
        except Exception:  # a broken to_dict must not hide the original error
            data = None
        if isinstance(data, dict):
            return data
    data = {"type": type(err).__name__, "message": getattr(err, "message", None) or str(err)}
    for attr in ("obj", "fix"):
        value = getattr(err, attr, None)
        if value is not None:
            data[attr] = value
    return data


def fail_from_error(module, err, **extra):
    """Fail the module from an ``ApplySetError``-like exception.

    ``err`` is expected to carry ``.message``, ``.obj`` (the object it is about),
    ``.fix`` (what the user can do) and ``.to_dict()``; any exception works, the missing
    parts are simply left out. The result has ``msg=str(err)`` and ``error=<dict>``, plus
    every keyword in ``extra`` (for example ``changed`` and the partial report of what
    was and was not done). ``msg`` and ``error`` always come from ``err``; same-named
    keys in ``extra`` are ignored.

    Does not return (``fail_json`` exits the module).
    """
    kwargs = dict(extra)
    kwargs.pop("msg", None)
    kwargs.pop("error", None)
    message = str(err) or getattr(err, "message", None) or type(err).__name__
    module.fail_json(msg=message, error=_error_dict(err), **kwargs)


class OptionError(Exception):
    """A module option that cannot work, reported in the same shape as the core's errors
    (``<option>: <what is wrong>. Fix: <what to do>`` plus ``error``), without needing the core."""

    def __init__(self, option, message, fix):
        super().__init__(f"option {option}: {message}. Fix: {fix}")
        self.message, self.obj, self.fix = message, f"option {option}", fix

    def to_dict(self):
        """The ``error`` of the failed result, shaped as the core's ``InputError.to_dict()``."""
        return {"type": "InputError", "message": self.message, "object": self.obj, "fix": self.fix}


def fail_option(module, option, message, fix):
    """Fail ``module`` for a bad value of ``option``, before any request: ``message`` says what is
    wrong, ``fix`` what to give instead (see ``OptionError``). Does not return."""
    fail_from_error(module, OptionError(option, message, fix), changed=False)


def _warning_text(warning):
    if isinstance(warning, str):
        return warning
    if isinstance(warning, dict):
        text = warning.get("message") or warning.get("msg")
        if text:
            return str(text)
    text = getattr(warning, "message", None)
    if text:
        return str(text)
    return str(warning)


def warn_all(module, warnings):
    """Pass each of ``warnings`` to ``module.warn``, once each, in order.

    Accepts strings, dicts with ``message``/``msg``, or objects with ``.message``
    (for example API server ``Warning:`` headers collected by the core). ``None`` and
    empty entries are skipped; an exact repeat (the same API warning for many objects)
    is reported once.
    """
    seen = set()
    for warning in warnings or ():
        if warning is None:
            continue
        text = _warning_text(warning).strip()
        if not text or text in seen:
            continue
        seen.add(text)
        module.warn(text)


def protected_input_spec():
    """The hidden parameter the action plugins fill (``redact.pack_protected_input``).

    ``no_log`` on a text parameter masks exactly that text, a JSON document no output
    contains, and keeps it out of the invocation and the syslog/journal line. (``no_log`` on
    ``definition`` itself would mask every string in it, names and ``apps/v1`` included.)
    """
    return {redact.PROTECTED_INPUT: {"type": "str", "no_log": True}}


def protected_input(module):
    """``(definition, kubeconfig)`` of ``module`` from the protected parameter, or from the visible ones.

    The visible parameters still work when the module is run without its action plugin.
    Fails the module (does not return) when the protected parameter is not valid. Every
    credential of an inline kubeconfig (long enough, see ``redact.MIN_MASKED_LENGTH``) is added
    to ``no_log_values``, so that no error message of the client can show it.
    """
    params = module.params
    try:
        carried = redact.unpack_protected_input(params.get(redact.PROTECTED_INPUT))
    except ValueError as err:
        module.fail_json(msg=f"internal parameter {redact.PROTECTED_INPUT} is not valid: {err}")
    definition = carried.get("definition", params.get("definition"))
    kubeconfig = carried.get("kubeconfig", params.get("kubeconfig"))
    if isinstance(kubeconfig, dict):
        module.no_log_values.update(redact.kubeconfig_secrets(kubeconfig))
    # client_key is a path, but a key pasted in by content (option or K8S_AUTH_CLIENT_KEY)
    # would be echoed by "no such file" errors: mask it whole.
    module.no_log_values.update(redact.pasted_private_key(params.get("client_key")))
    return definition, kubeconfig


def protected_src_contents(module):
    """The bytes of the vault-encrypted ``src`` files the action plugin decrypted on the controller,
    by real path (``{}`` when there are none). Call it after ``protected_input``, which fails the
    module when the protected parameter is not valid."""
    return redact.unpack_protected_input(module.params.get(redact.PROTECTED_INPUT)).get("src_contents", {})


def protected_helm_values(module):
    """The ``helm.values`` the action plugin carried in the protected parameter, else the visible ones
    (a module run without its action plugin); ``{}`` without a chart."""
    carried = redact.unpack_protected_input(module.params.get(redact.PROTECTED_INPUT))
    helm = module.params.get("helm") or {}
    return carried.get("helm_values", helm.get("values") or {})


def protected_helm_set_values(module):
    """The ``helm.set_values`` the action plugin carried in the protected parameter, else the visible
    ones; ``[]`` without them."""
    carried = redact.unpack_protected_input(module.params.get(redact.PROTECTED_INPUT))
    helm = module.params.get("helm") or {}
    return carried.get("helm_set_values", helm.get("set_values") or [])


def module_argument_spec(**options):
    """The argument spec of a module of the collection: the connection options (``AUTH_ARG_SPEC``),
    the hidden parameter of the action plugins (``protected_input_spec``) and ``options``."""
    spec = auth_arg_spec()
    spec.update(protected_input_spec())
    spec.update(options)
    return spec


def fail_missing_library(module, error):
    """Fail ``module`` when a Python library it needs could not be imported (``error`` is the
    ``ImportError``, or None when all were). Does not return on an error."""
    if error is not None:
        module.fail_json(msg=f"a required Python library is missing: {error}")


def start(module, import_error=None):
    """What every module of the collection does first, before any request: fail on a missing
    library, read the protected input (see ``protected_input``) and check ``parallelism``.

    Returns ``(definition, kubeconfig)``; fails the module (does not return) on a bad value.
    """
    fail_missing_library(module, import_error)
    definition, kubeconfig = protected_input(module)
    parallelism = module.params["parallelism"]
    if parallelism is not None and parallelism < 1:
        fail_option(module, "parallelism", f"must be at least 1, not {parallelism}", "set parallelism: 1 or more")
    return definition, kubeconfig


def check_names(module):
    """The names of ``parent`` and ``namespace`` as the server checks them, before any request.

    Raises:
        InputError: naming the option and the name's rule.
    """
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import names

    names.check_options(module.params["parent"], module.params["namespace"])


def connect(module, kubeconfig):
    """The client for the connection options of ``module`` (``kubeconfig`` as ``protected_input``
    returned it), sending ``parallelism`` requests at once at the most.

    Raises:
        ApplySetError: a connection setting that cannot work, with its fix.
    """
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.kube import client as kube

    params = module.params
    return kube.connect(auth_params(dict(params, kubeconfig=kubeconfig)), parallelism=params["parallelism"])


def options_from(params, table, **fixed):
    """The keywords of an ``Options`` from a module's ``params``, by ``table``: rows of
    ``(parameter, field, convert)``, where a dotted ``parameter`` is a suboption
    (``guard.max_prune_percent``), a dotted ``field`` a key of a dictionary field
    (``wait_rules.fail_closed``) and ``convert`` a function of the value, or None to take it as it is.
    ``fixed`` adds keywords that are no parameter (check mode, for example)."""
    fields: dict = {}
    for parameter, name, convert in table:
        value = params
        for key in parameter.split("."):
            value = value[key]
        if convert is not None:
            value = convert(value)
        *outer, last = name.split(".")
        target = fields
        for key in outer:
            target = target.setdefault(key, {})
        target[last] = value
    fields.update(fixed)
    return fields


def wait_rules_spec() -> dict:
    """The ``wait_rules`` option as applyset_apply and applyset_info take it (readiness rules)."""
    return dict(type="dict", default={}, options=dict(
        fail_closed=dict(type="bool", default=False),
        overrides=dict(type="dict", default={}),
        load_balancers=dict(type="bool", default=False),
        health_check_exprs=dict(type="list", elements="dict", options=dict(
            apiVersion=dict(type="str"), kind=dict(type="str"), current=dict(type="str"),
            inProgress=dict(type="str"), failed=dict(type="str"))),
    ))


def health_check_exprs(wait_rules) -> list:
    """``wait_rules.health_check_exprs`` as the user wrote them: Ansible fills each suboption not given with None."""
    return [{key: value for key, value in entry.items() if value is not None}
            for entry in (wait_rules or {}).get("health_check_exprs") or []]
