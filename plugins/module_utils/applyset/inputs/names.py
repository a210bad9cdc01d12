"""Object and namespace names, checked as the API server checks them (pure functions).

The rules are Kubernetes' own (k8s.io/apimachinery/pkg/util/validation and
pkg/api/validation/path, and which kind uses which in k8s.io/kubernetes pkg/apis/*/validation,
release 1.34): namespaces are DNS-1123 labels; most kinds need a DNS-1123 subdomain, some a
label (StatefulSet) or a DNS-1035 label (Service); RBAC kinds only need a valid path segment,
which is also what the server requires of every other name. Checking them before the first
request turns "namespaces \"Tenant_A\" not found" into an error that names the field and the rule.
"""

from __future__ import annotations

import re

from .. import spec
from ..errors import InputError, InputErrors

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
CRONJOB_NAME_MAX = 52  # 63 minus the 11 characters of the Jobs' time suffix

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(_LABEL + r"(\." + _LABEL + ")*")
_DNS1035_LABEL = re.compile("[a-z]([-a-z0-9]*[a-z0-9])?")

DNS1123_LABEL = "DNS-1123 label"
DNS1123_SUBDOMAIN = "DNS-1123 subdomain"
DNS1035_LABEL = "DNS-1035 label"
PATH_SEGMENT = "path segment"

RULE_TEXT = {
    DNS1123_LABEL: "at most 63 characters: lower case letters, digits and '-', starting and ending with a "
                   "letter or digit",
    DNS1123_SUBDOMAIN: "at most 253 characters: lower case letters, digits, '-' and '.', starting and ending "
                       "with a letter or digit",
    DNS1035_LABEL: "at most 63 characters: lower case letters, digits and '-', starting with a letter and "
                   "ending with a letter or digit",
    PATH_SEGMENT: "not '.' or '..', and without '/' or '%'",
}

# Kinds whose names are not DNS-1123 subdomains, by (group, kind). Every other built-in kind
# (ConfigMap, Secret, Deployment, Job, Ingress, CRD, ...) and every custom resource served by a
# CRD uses DNS1123_SUBDOMAIN; the server requires at least PATH_SEGMENT of any name.
_NAME_RULES = {
    spec.NAMESPACE_KIND: DNS1123_LABEL,
    spec.SERVICE_KIND: DNS1035_LABEL,  # DNS-1123 label with the alpha gate RelaxedServiceNameValidation
    ("apps", "StatefulSet"): DNS1123_LABEL,
    # Checked against a real API server (tests/integration/test_connection_errors.py): the server
    # checks these only as path segments; a stricter rule here would refuse valid input.
    ("", "Event"): PATH_SEGMENT,
    ("policy", "PodDisruptionBudget"): PATH_SEGMENT,
    ("rbac.authorization.k8s.io", "Role"): PATH_SEGMENT,
    ("rbac.authorization.k8s.io", "ClusterRole"): PATH_SEGMENT,
    ("rbac.authorization.k8s.io", "RoleBinding"): PATH_SEGMENT,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): PATH_SEGMENT,
}

# Built-in groups: their kinds not in _NAME_RULES take DNS-1123 subdomains. Kinds of other groups
# are custom resources (subdomains too, when a CRD serves them) or aggregated APIs with rules of
# their own, so only PATH_SEGMENT is certain for them.
BUILT_IN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "storage.k8s.io",
    "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "flowcontrol.apiserver.k8s.io",
    "certificates.k8s.io", "resource.k8s.io", "storagemigration.k8s.io", "events.k8s.io",
})
# Kinds of built-in groups with special names, left to the server (IP addresses, version.group,
# signer-derived names); they still get the path-segment minimum.
_SERVER_CHECKED = frozenset({
    ("networking.k8s.io", "IPAddress"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("coordination.k8s.io", "LeaseCandidate"), ("certificates.k8s.io", "CertificateSigningRequest"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
})

# Cluster-scoped kinds of the built-in groups: their metadata.namespace is dropped (as kubectl
# does), so it is not checked here.
CLUSTER_SCOPED = frozenset({
    ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"), ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "VolumeAttributesClass"),
    ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "IPAddress"), ("networking.k8s.io", "ServiceCIDR"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("resource.k8s.io", "DeviceClass"), ("resource.k8s.io", "ResourceSlice"),
})


def rule_problems(rule: str, value: str) -> list[str]:
    """What is wrong with ``value`` under ``rule`` (one of the rule names above); [] if nothing.

    Each problem is a short phrase such as ``"is longer than 63 characters"``.
    """
    if rule == PATH_SEGMENT:
        if value in (".", ".."):
            return [f"may not be '{value}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in value]
    limit, pattern = {
        DNS1123_LABEL: (DNS1123_LABEL_MAX, _DNS1123_LABEL),
        DNS1123_SUBDOMAIN: (DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN),
        DNS1035_LABEL: (DNS1035_LABEL_MAX, _DNS1035_LABEL),
    }[rule]
    problems: list[str] = []
    if len(value) > limit:
        problems.append(f"is longer than {limit} characters")
    if not pattern.fullmatch(value):
        problems.append(f"is not a valid {rule}")
    return problems


def name_rule(group: str, kind: str, served_by_crd: bool = False) -> str:
    """The rule the API server applies to the name of a ``kind`` of ``group``.

    ``served_by_crd``: the kind is defined by a CustomResourceDefinition (in the same input),
    whose objects the server checks as DNS-1123 subdomains.
    """
    if (group, kind) in _NAME_RULES:
        return _NAME_RULES[(group, kind)]
    if served_by_crd or group in BUILT_IN_GROUPS and (group, kind) not in _SERVER_CHECKED:
        return DNS1123_SUBDOMAIN
    return PATH_SEGMENT


def name_problem(group: str, kind: str, name: str, served_by_crd: bool = False) -> str | None:
    """One sentence saying why the server would refuse ``name`` for a ``kind`` of ``group``, or None.

    ``served_by_crd`` as in ``name_rule``. CronJob names have a shorter limit of their own.
    """
    rule = name_rule(group, kind, served_by_crd)
    problems = rule_problems(rule, name)
    if not problems and (group, kind) == ("batch", "CronJob") and len(name) > CRONJOB_NAME_MAX:
        problems = [f"is longer than {CRONJOB_NAME_MAX} characters (the limit for CronJobs, whose "
                    "Jobs add 11 characters)"]
    if not problems:
        return None
    return f'metadata.name "{name}" {" and ".join(problems)}; a {kind} name must be a {rule}: {RULE_TEXT[rule]}'


def namespace_problem(namespace: str, field: str = "metadata.namespace") -> str | None:
    """One sentence saying why ``namespace`` cannot name a namespace, or None; the sentence names the
    input as ``field`` (``metadata.namespace``, or ``namespace`` for the option)."""
    problems = rule_problems(DNS1123_LABEL, namespace)
    if not problems:
        return None
    return (f'{field} "{namespace}" {" and ".join(problems)}; a namespace name must be a {DNS1123_LABEL}: '
            f"{RULE_TEXT[DNS1123_LABEL]}")


def fix_for(value: str) -> str:
    """The fix for an invalid name ``value``: use its lower-case form with the invalid characters as
    '-' (quoted as an example when that differs from ``value``)."""
    suggestion = re.sub(r"[^a-z0-9.-]+", "-", value.lower()).strip("-.")
    if suggestion and suggestion != value:
        return f'use lower case letters, digits and "-", e.g. "{suggestion[:DNS1123_LABEL_MAX].strip("-.")}"'
    return 'use lower case letters, digits and "-"'


def check_options(parent: object, namespace: object) -> None:
    """Check the names in the module's options before any request.

    ``parent`` is the ``parent`` option (kubectl's ``[RESOURCE][.GROUP]/NAME``, a reference dict
    or a full custom resource), ``namespace`` the ``namespace`` option (or None). Every parent
    kind allowed (Secret, ConfigMap, a custom resource) needs a DNS-1123 subdomain as its name;
    namespaces are DNS-1123 labels. Raises ``InputErrors`` naming the option and the rule. A
    parent option of the wrong shape is left to the parent's own resolution.
    """
    problems: list[InputError] = []
    if isinstance(namespace, str) and namespace:
        problem = namespace_problem(namespace, field="namespace")
        if problem:
            problems.append(InputError(problem, obj="option namespace", fix=fix_for(namespace)))
    name, parent_namespace = _parent_name_and_namespace(parent)
    if isinstance(name, str) and name:
        broken = rule_problems(DNS1123_SUBDOMAIN, name)
        if broken:
            problems.append(InputError(
                f'name "{name}" {" and ".join(broken)}; an ApplySet parent (a Secret, ConfigMap or custom '
                f"resource) name must be a {DNS1123_SUBDOMAIN}: {RULE_TEXT[DNS1123_SUBDOMAIN]}",
                obj="option parent", fix=fix_for(name)))
    if isinstance(parent_namespace, str) and parent_namespace:
        problem = namespace_problem(parent_namespace, field="namespace")
        if problem:
            problems.append(InputError(problem, obj="option parent", fix=fix_for(parent_namespace)))
    if problems:
        raise InputErrors(problems)


def _parent_name_and_namespace(parent: object) -> tuple[object, object]:
    """The name and namespace the ``parent`` option gives (None where it gives none); unchecked values."""
    if isinstance(parent, str):
        try:
            return spec.parse_parent_ref(parent)[2], None
        except InputError:
            return None, None  # the parent's resolution reports the syntax
    if isinstance(parent, dict):
        metadata = parent.get("metadata")
        ref = metadata if isinstance(metadata, dict) else parent
        return ref.get("name"), ref.get("namespace")
    return None, None


# ----- label and annotation keys and values (ValidateObjectMeta, for every kind) -----------------

QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
ANNOTATIONS_TOTAL_MAX = 256 * 1024  # bytes of all keys and values together

_QUALIFIED_NAME = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

KEY_RULE = ('[PREFIX/]NAME: NAME at most 63 letters, digits, "-", "_" and ".", starting and ending with a '
            "letter or digit; PREFIX a DNS-1123 subdomain")
LABEL_VALUE_RULE = ('at most 63 letters, digits, "-", "_" and ".", starting and ending with a letter or digit, '
                    "or empty")


def qualified_name_problems(key: str) -> list[str]:
    """What is wrong with the label or annotation ``key`` (apimachinery's IsQualifiedName); [] if nothing."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["has more than one '/'"]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("has an empty prefix before '/'")
        elif rule_problems(DNS1123_SUBDOMAIN, prefix):
            problems.append(f'has a prefix "{prefix}" that is not a {DNS1123_SUBDOMAIN}')
    if not name:
        problems.append("has an empty name part")
    else:
        if len(name) > QUALIFIED_NAME_MAX:
            problems.append(f"has a name part longer than {QUALIFIED_NAME_MAX} characters")
        if not _QUALIFIED_NAME.fullmatch(name):
            problems.append(f'has a name part "{name}" with characters other than letters, digits, "-", "_" '
                            'and ".", or that does not start and end with a letter or digit')
    return problems


def label_value_problems(value: str) -> list[str]:
    """What is wrong with a label ``value`` (apimachinery's IsValidLabelValue); [] if nothing."""
    problems: list[str] = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(f"is longer than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE.fullmatch(value):
        problems.append("is not a valid label value")
    return problems


def metadata_map_problems(labels: object, annotations: object) -> list[tuple[str, str]]:
    """(problem, fix) pairs for ``metadata.labels`` and ``metadata.annotations``, checked as the API
    server checks them for every kind. Maps and values of the wrong type are left to the caller."""
    found: list[tuple[str, str]] = []
    for key, value in (labels if isinstance(labels, dict) else {}).items():
        if not isinstance(key, str):
            continue
        problems = qualified_name_problems(key)
        if problems:
            found.append((f'metadata.labels key "{key}" {" and ".join(problems)}; a label key is {KEY_RULE}',
                          "rename the key"))
        if isinstance(value, str):
            problems = label_value_problems(value)
            if problems:
                found.append((f'metadata.labels["{key}"] value "{value}" {" and ".join(problems)}; a label value '
                              f"is {LABEL_VALUE_RULE}", _value_fix(value)))
    if isinstance(annotations, dict):
        total = 0
        for key, value in annotations.items():
            if not isinstance(key, str):
                continue
            # The server lower-cases annotation keys before the check: upper case is allowed.
            problems = qualified_name_problems(key.lower())
            if problems:
                found.append((f'metadata.annotations key "{key}" {" and ".join(problems)}; an annotation key '
                              f"is {KEY_RULE} (upper case allowed)", "rename the key"))
            total += len(key.encode()) + (len(value.encode()) if isinstance(value, str) else 0)
        if total > ANNOTATIONS_TOTAL_MAX:
            found.append((f"metadata.annotations are {total} bytes, more than the {ANNOTATIONS_TOTAL_MAX} bytes "
                          "(256 KiB) the API server allows", "move large data into a ConfigMap or Secret"))
    return found


def _value_fix(value: str) -> str:
    suggestion = re.sub(r"[^A-Za-z0-9_.-]+", "-", value)[:LABEL_VALUE_MAX].strip("-_.")
    if suggestion and suggestion != value:
        return f'use letters, digits, "-", "_" and ".", e.g. "{suggestion}"'
    return 'use letters, digits, "-", "_" and "."'
