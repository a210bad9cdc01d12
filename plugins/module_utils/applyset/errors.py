"""Typed errors that say which object is affected and how to fix the problem.

Every error the core library raises is an ``ApplySetError``. Modules turn one into a
failed result with ``to_dict()``; the string form is meant to be read by a person:

    Deployment shop/web: metadata.generateName is not supported. Fix: set metadata.name
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict, cast

from .object_meta import KubeObject

if TYPE_CHECKING:  # the report of a run, named for the annotation only: errors are below every layer
    from .run.report import Report


class StatusCause(TypedDict, total=False):
    """One of a Status object's ``details.causes``: what the server refused, and where."""

    reason: str
    message: str
    field: str


# An error's machine-readable extras in the module result (``details``): plain JSON, each error its own keys.
ErrorDetails = dict[str, Any]


class ApplySetError(Exception):
    """Base class of all errors raised by the ApplySet library.

    ``message`` says what is wrong, ``obj`` names the object or input it is about
    (``Deployment shop/web``, ``file app.yaml, document 3``), ``fix`` tells the user what
    to do about it and ``details`` holds machine-readable extras for the module result.
    ``report`` is the partial ``run.report.Report`` when a run failed (the engine attaches it).
    ``what_failed`` is the message without what the failed run left as it was ("nothing was
    pruned, and the parent keeps covering every object"): what a rollback, which changes that,
    quotes.
    """

    report: Report | None = None

    def __init__(self, message: str, *, obj: str | None = None, fix: str | None = None,
                 details: ErrorDetails | None = None, what_failed: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.obj = obj
        self.fix = fix
        self.details = details
        self._what_failed = what_failed

    @property
    def what_failed(self) -> str:
        """The message without what the failed run left as it was (the whole message by default)."""
        return self._what_failed or self.message

    @what_failed.setter
    def what_failed(self, text: str | None) -> None:
        self._what_failed = text

    def __str__(self) -> str:
        text = self.message
        if self.obj and not text.startswith(str(self.obj)):
            # A message that opens with its subject reads once: "revision 9 of ApplySet Secret
            # shop/web is not kept", not the subject, a colon and the same subject again.
            text = f"{self.obj}: {text}"
        if self.fix:
            text = f"{_end_sentence(text)} Fix: {self.fix}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Return the error as plain data for a module result."""
        result: dict[str, Any] = {
            "type": type(self).__name__,
            "message": self.message,
            "object": self.obj,
            "fix": self.fix,
        }
        if self.details:
            result["details"] = self.details
        return result


def _end_sentence(text: str) -> str:
    # Avoid "..". when the message already ends with punctuation.
    return text if text.endswith((".", "!", "?", ":")) else text + "."


class InputError(ApplySetError):
    """Bad manifests or options. Always raised before anything is written to the cluster."""


class InputErrors(InputError):
    """Several input errors reported together, so the user can fix them all in one go."""

    def __init__(self, errors: Iterable[ApplySetError]) -> None:
        self.errors = list(errors)
        count = len(self.errors)
        heading = "1 problem in the input" if count == 1 else f"{count} problems in the input"
        lines = [heading + ":"] + [f"- {error}" for error in self.errors]
        super().__init__("\n".join(lines))

    def to_dict(self) -> dict[str, Any]:
        """``ApplySetError.to_dict`` plus ``errors``: each error's own dict."""
        result = super().to_dict()
        result["errors"] = [error.to_dict() for error in self.errors]
        return result


class ParentError(ApplySetError):
    """The parent is invalid, not permitted, owned by another tool, or has a mismatched ID."""


class ParentChanged(ParentError):
    """A write of the parent was refused because someone wrote it since this run read it (its
    resourceVersion is stale), or created it while this run meant to create it. Before the run
    holds its claim, that is a race for the claim (claim.RaceLost); while it holds it, a true
    conflict."""


class ApiError(ApplySetError):
    """The API server answered with an HTTP error.

    ``status`` is the HTTP status code, ``reason`` the Kubernetes Status reason
    (``NotFound``, ``Conflict``...) and ``body`` the decoded Status object, if any.
    """

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None,
                 body: KubeObject | None = None, obj: str | None = None, fix: str | None = None,
                 details: ErrorDetails | None = None) -> None:
        super().__init__(message, obj=obj, fix=fix, details=details)
        self.status = status  # None: no answer (ConnectionFailed)
        self.reason = reason
        self.body = body

    def to_dict(self) -> dict[str, Any]:
        """``ApplySetError.to_dict`` plus the HTTP ``status`` and the ``reason``."""
        result = super().to_dict()
        result["status"] = self.status
        result["reason"] = self.reason
        return result


class ConflictError(ApiError):
    """Server-side apply refused a change (HTTP 409) because another field manager owns fields."""

    @property
    def conflicting_fields(self) -> list[str]:
        """Field paths from the Status causes, e.g. ``.spec.replicas``."""
        causes = ((self.body or {}).get("details") or {}).get("causes") or []
        return [cause["field"] for cause in causes if isinstance(cause, dict) and cause.get("field")]

    def to_dict(self) -> dict[str, Any]:
        """``ApiError.to_dict`` plus ``conflicting_fields``."""
        result = super().to_dict()
        result["conflicting_fields"] = self.conflicting_fields
        return result


class GuardError(ApplySetError):
    """The blast-radius guard refused to prune; ``details`` holds the would-be-pruned objects."""


class WaitTimeout(ApplySetError):
    """Objects did not become ready within the allowed time."""


class NamespaceMissingError(InputError):
    """Namespaces the set writes into do not exist; found before the first write.

    ``details["missing"]`` lists them; ``details["terminating"]`` those being deleted.
    """


class PlanChanged(InputError):
    """``approved_plan`` was given and the plan the run computed differs from it; found before the
    first write. ``details`` holds ``approved_plan_id``, ``plan_id`` and ``differences`` (each
    object's line, empty when only the id was approved)."""


# How the API server words a refusal to change a field in place. "field is immutable" is
# apimachinery's ValidateImmutableField (Job template, Deployment selector, immutable
# ConfigMaps, ...); a Service's clusterIP "may not change once set"; a StatefulSet refuses
# "updates to statefulset spec for fields other than ..."; a PVC's "spec is immutable
# after creation".
_IMMUTABLE_MARKERS = ("immutable", "may not change once set", "updates to statefulset spec for fields other than")


def _status_causes(err: BaseException) -> list[StatusCause]:
    causes = (((getattr(err, "body", None) or {}).get("details") or {}).get("causes")) or []
    return [cast(StatusCause, cause) for cause in causes if isinstance(cause, dict)]


def _is_immutable_text(text: str | None) -> bool:
    text = (text or "").lower()
    return any(marker in text for marker in _IMMUTABLE_MARKERS)


def _short_cause(cause: StatusCause) -> str:
    """``field: why`` without the value dump: a Job's refusal quotes its whole pod template."""
    message = cause.get("message") or ""
    if message.startswith("Invalid value:"):
        # "Invalid value: {...}: field is immutable" -> "field is immutable"
        message = message.rpartition(": ")[2]
    message = message.strip()
    if len(message) > 200:
        message = message[:200] + "..."
    return f"{cause['field']}: {message}" if cause.get("field") else message


def immutable_refusal(err: BaseException) -> list[tuple[str, str]]:
    """The fields the ``ApiError`` ``err`` refused because they cannot change in place, or ``[]``.

    Only a refusal whose every cause is such a field counts (HTTP 422, reason Invalid):
    when the server also found a plain mistake, deleting and creating the object again
    would not help. Returns ``[(field, "field: why"), ...]``; the field is "" when the
    server named none.
    """
    if getattr(err, "status", None) != 422:
        return []
    causes = _status_causes(err)
    if not causes:
        message = getattr(err, "message", "") or ""
        return [("", message[:200])] if _is_immutable_text(message) and len(message) <= 1000 else []
    if not all(_is_immutable_text(cause.get("message")) for cause in causes):
        return []
    return [(cause.get("field") or "", _short_cause(cause)) for cause in causes]


def missing_namespace(err: BaseException) -> str | None:
    """The namespace that the ``ApiError`` ``err`` says is missing (a 404 ``namespaces "x" not
    found``), or None for any other error."""
    if getattr(err, "status", None) != 404:
        return None
    details = (getattr(err, "body", None) or {}).get("details") or {}
    if details.get("kind") == "namespaces" and details.get("name"):
        return details["name"]
    return None


class ConfigError(InputError):
    """The connection settings cannot be used: no such kubeconfig file, an empty one, a context
    that does not exist. Raised before any request is sent."""


class ConnectionFailed(ApiError):
    """No HTTP answer from the API server: connection refused, unknown host, TLS verification
    failed, timeout. ``details`` names the server and where its address and CA came from."""


class AuthenticationFailed(ApiError):
    """The API server did not accept the credentials (HTTP 401), or sent only anonymous access
    away (HTTP 403 on discovery). ``details`` names the server and the credential's source."""
