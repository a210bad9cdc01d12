"""What a failed LIST means, and what to do about it (pure).

A LIST can fail for many reasons besides the credentials: a CustomResourceDefinition's
conversion webhook that does not answer (500), an aggregated API that is down (503), the
server's storage still (re)initializing (429), a kind that is no longer served (404). Only a
401 or a 403 is the credentials' fault, so only those get credential advice; the others are
named as what they are, with the service a webhook tried to reach when the server's message
names it. ``explain`` gives the cause, a short description and the fix; the engine
(``listing``), ``applyset_info`` (``verify.inventory``) and ``applyset_verify`` (``verify.checks``) word
their messages with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .discovery import Resource

# The causes ``explain`` tells apart.
CREDENTIALS = "credentials"
CONVERSION_WEBHOOK = "conversion webhook"
WEBHOOK = "webhook"
STORAGE = "storage initializing"
UNAVAILABLE = "api service unavailable"
NOT_SERVED = "not served"
SERVER = "server error"

# A webhook's URL as the server quotes it: https://NAME.NAMESPACE.svc:PORT/PATH.
_SERVICE_URL = re.compile(r"https?://([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc\b")
_ANY_URL = re.compile(r"https?://[^\s\"'/]+")
_SERVICE_NOT_FOUND = re.compile(r'service "([^"]+)" not found')


@dataclass(frozen=True)
class ListFailure:
    """Why a LIST failed: ``cause`` (one of the constants above), ``what`` (a short description for a
    message, without the server's own text), ``fix``, and ``service`` (``namespace/name`` or a URL
    host, when the server's message names the webhook it tried to reach)."""

    cause: str
    what: str
    fix: str
    service: str | None = None

    @property
    def credentials(self) -> bool:
        """The credentials were refused (401) or are not allowed to list (403)."""
        return self.cause == CREDENTIALS


def webhook_service(message: str) -> str | None:
    """The service a webhook call tried to reach, as the server's ``message`` names it:
    ``namespace/name`` from an in-cluster URL, else the URL's host, else the name in
    ``service "NAME" not found``; None when the message names none."""
    found = _SERVICE_URL.search(message or "")
    if found:
        return f"{found.group(3)}/{found.group(1)}"
    url = _ANY_URL.search(message or "")
    if url:
        return url.group(0).split("://", 1)[1]
    missing = _SERVICE_NOT_FOUND.search(message or "")
    return missing.group(1) if missing else None


def resource_name(res: Resource) -> str:
    """``plural.group`` (``plural`` for the core group), as RBAC rules name a resource."""
    return f"{res.plural}.{res.group}" if res.group else res.plural


def explain(status: int | None, message: str, res: Resource, namespace: str | None = None) -> ListFailure:
    """Why the LIST of ``res`` (in ``namespace``, or across all namespaces when None, or a
    cluster-scoped kind) failed with HTTP ``status`` and the server's ``message``.

    Args:
        status: the HTTP status (None when there was none).
        message: the server's message.
        res: the ``discovery.Resource`` listed.
        namespace: the namespace listed.
    """
    text = (message or "").lower()
    if status in (401, 403):
        where = f" in namespace {namespace}" if namespace else (" across all namespaces" if res.namespaced else "")
        return ListFailure(CREDENTIALS, "the credentials may not list it",
                           f"the credentials need list on {resource_name(res)}{where}")
    if "conversion webhook" in text:
        service = webhook_service(message)
        at = f" (service {service})" if service else ""
        return ListFailure(
            CONVERSION_WEBHOOK,
            f"the conversion webhook of CustomResourceDefinition {res.plural}.{res.group} failed{at}",
            f"make the conversion webhook{at} answer again (check its Service, endpoints and pods), or set the "
            f"CRD's conversion strategy back to None; the credentials are not the problem", service)
    if "webhook" in text:
        service = webhook_service(message)
        at = f" (service {service})" if service else ""
        return ListFailure(WEBHOOK, f"a webhook failed{at}",
                           f"make the webhook{at} answer again; the credentials are not the problem", service)
    if status == 429 or "initializing" in text:
        return ListFailure(STORAGE, "the API server's storage for it is not ready (still (re)initializing)",
                           "run again in a minute, once the API server has finished starting")
    if status == 503:
        version = f"{res.version}.{res.group}"  # the core group's APIService is v1.
        return ListFailure(UNAVAILABLE, f"the API service that serves {res.group or 'core'}/{res.version} is "
                           "unavailable", f"check the APIService {version} (kubectl get apiservice {version}) and "
                           "the service behind it")
    if status == 404:
        return ListFailure(NOT_SERVED, "the server does not serve it (any more)",
                           "check that its CustomResourceDefinition or APIService still exists")
    return ListFailure(SERVER, f"the API server failed (HTTP {status})" if status else "the API server failed",
                       "check the API server (and its logs) and run again")


def explain_error(err: BaseException, res: Resource, namespace: str | None = None) -> ListFailure:
    """``explain`` for an ``errors.ApiError``."""
    return explain(getattr(err, "status", None), getattr(err, "message", str(err)), res, namespace)
