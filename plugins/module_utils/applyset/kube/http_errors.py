"""Where an HTTP failure becomes one of our errors: a refused connection, a 401, a 403 on
discovery, a 409, any other status of 400 or above.

Each error names the API server, where its address, credential or CA came from (a
``connection.ConnectionSource``) and what to do. urllib3's exceptions are only looked at here
(``is_tls_failure`` also tells the client not to retry a certificate that does not verify).
Nothing here sends a request.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

from .connection import ConnectionSource, credential_fix
from ..errors import ApiError, AuthenticationFailed, ConflictError, ConnectionFailed


def api_error(method: str, path: str, status: int, payload: object) -> ApiError:
    """The error for an answer of HTTP ``status`` (400 or above, not 401) to ``method`` ``path``.

    ``payload`` is the decoded body: a ``Status`` object gives the message and reason, text is
    the message. Returns a ``ConflictError`` for 409, else an ``ApiError``.
    """
    status_obj = payload if isinstance(payload, dict) and payload.get("kind") == "Status" else None
    message = (status_obj or {}).get("message") or (payload if isinstance(payload, str) else "") or f"HTTP {status}"
    reason = (status_obj or {}).get("reason") or ""
    cls = ConflictError if status == 409 else ApiError
    return cls(message, status=status, reason=reason, body=status_obj, details={"request": f"{method} {path}"})


def unauthorized(host: str, src: ConnectionSource, method: str, path: str, payload: object) -> AuthenticationFailed:
    """The error for a 401 from the server ``host`` to ``method`` ``path`` (``payload`` the decoded
    body): names the credential ``src`` says was sent, and how to renew it."""
    status = payload if isinstance(payload, dict) and payload.get("kind") == "Status" else None
    details = {"request": f"{method} {path}", "server": host, "credential_source": src.credential}
    if src.credential_kind == "none":
        message = (f"the server requires credentials and none were sent: {src.credential} "
                   "(kubectl says: You must be logged in to the server (Unauthorized))")
    else:
        message = (f"{src.credential} was not accepted: it is wrong or has expired "
                   "(401 Unauthorized; kubectl says: You must be logged in to the server (Unauthorized))")
    return AuthenticationFailed(message, status=401, reason="Unauthorized", body=status,
                                obj=f"API server {host}", fix=credential_fix(src), details=details)


def forbidden_discovery(host: str, src: ConnectionSource, err: ApiError) -> AuthenticationFailed:
    """The error for a 403 (``err``) to a discovery request: an anonymous user, or one without the
    system:discovery ClusterRole."""
    anonymous = "system:anonymous" in (err.message or "")
    if anonymous:
        fix = ("the server took the request as anonymous: give credentials (a token in api_key or "
               "K8S_AUTH_API_KEY, or a kubeconfig user with a token or client certificate)")
    else:
        fix = ("the user needs the system:discovery ClusterRole (every authenticated user has it by "
               "default): ask the cluster's admin to restore its binding, or use other credentials")
    return AuthenticationFailed(
        f"discovery refused (403 Forbidden) to {src.credential}: {err.message}",
        status=403, reason=err.reason, body=err.body, obj=f"API server {host}", fix=fix,
        details=dict(err.details or {}, server=host, credential_source=src.credential))


def connection_failed(host: str, src: ConnectionSource, method: str, path: str, err: Exception,
                      attempts: int, seconds: float) -> ConnectionFailed:
    """The error for ``method`` ``path`` getting no answer from ``host`` (urllib3's ``err``) after
    ``attempts`` tries in ``seconds``: TLS verification failed (naming the CA used), connection
    refused, a host name that does not resolve, a timeout, or no answer."""
    import urllib3

    cause = _unwrap(err)
    details = {"request": f"{method} {path}", "server": host, "server_source": src.server, "ca_source": src.ca}
    # Say so when the wait was spent retrying, so that nobody takes it for a hang.
    tried = f", {attempts} tries in {seconds:.0f} s" if attempts > 1 else ""
    if is_tls_failure(err):
        return ConnectionFailed(
            f"TLS verification of the API server's certificate failed: {cause}. The CA used: {src.ca}",
            obj=f"API server {host}", details=details,
            fix="give the CA that signed the server's certificate (ca_cert or K8S_AUTH_SSL_CA_CERT, or "
                "certificate-authority-data in the kubeconfig), and check that the server address "
                f"({src.server}) is the cluster's; validate_certs: false only for a test cluster")
    if _caused_by(err, ConnectionRefusedError):
        what, fix = "connection refused", "check that the cluster is running and that the address and port are right"
    elif _caused_by(err, socket.gaierror) or "Failed to resolve" in cause:
        what, fix = "the host name does not resolve", "check the server address and DNS where the module runs"
    elif isinstance(err, urllib3.exceptions.TimeoutError) or "timed out" in cause:
        what, fix = "timed out", "check the address, firewalls and proxy (proxy, no_proxy) between here and the cluster"
    else:
        what, fix = "no answer", "check that the API server is reachable (address, proxy, firewalls)"
    return ConnectionFailed(
        f"cannot connect ({what}{tried}): {cause}. The address comes from {src.server}",
        obj=f"API server {host}", details=details, fix=fix)


def is_tls_failure(err: BaseException) -> bool:
    """Whether ``err`` is, or wraps, a failed verification of the server's certificate."""
    import ssl

    return any(isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(cause)
               or "certificate verify failed" in str(cause) for cause in _causes(err))


def is_timeout(err: BaseException) -> bool:
    """Whether ``err`` is, or wraps, a timeout: no connection or no answer in time."""
    import urllib3

    return _caused_by(err, (urllib3.exceptions.TimeoutError, socket.timeout))


def _unwrap(err: Exception) -> str:
    reason = getattr(err, "reason", None)
    return str(reason or err)


def _causes(err: BaseException) -> Iterator[BaseException]:
    """The exception and everything it wraps: urllib3 nests the socket or TLS error in ``reason``,
    ``__cause__`` or ``args``."""
    pending: list[object] = [err]
    seen: set[int] = set()
    while pending:
        current = pending.pop(0)
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]


def _caused_by(err: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]) -> bool:
    return any(isinstance(cause, kind) for cause in _causes(err))
