"""What the core asks of a Kubernetes client, written once: ``KubeApi``.

``client.KubeClient`` is the one implementation that talks to a server; the unit tests' doubles
implement the part of it they need, each method as declared here (tests/unit/test_client_doubles.py
checks them against this Protocol), and the core's functions take a ``KubeApi`` rather than the
class, so that mypy checks what they call on it. ``EarlyReadSeam`` is how ``run/early.py`` answers
the client's first reads (``KubeClient.early``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from .connection import ConnectionSource
from .discovery import Discovery, Resource
from ..object_meta import KubeObject
from .http_requests import ApiRequest, JsonPatchOperation, MergePatch, Query, Response
from .kubeconfig import KubeconfigDoc

Item = TypeVar("Item")


class KubeApi(Protocol):
    """The requests of ``client.KubeClient`` (see it for what each sends, retries and raises)."""

    host: str
    source: ConnectionSource
    parallelism: int
    requests_sent: int
    writes_sent: int

    @property
    def round_trips(self) -> int:
        ...

    def request(self, method: str, path: str, *, query: Query | None = None, body: object = None,
                content_type: str | None = None, accept: str = "application/json",
                retry: bool | None = None) -> Response:
        ...

    def send(self, req: ApiRequest) -> Response:
        ...

    def map(self, func: Callable[[Item], Any], items: Iterable[Item]) -> list[Any]:
        ...

    def stream(self, req: ApiRequest, read_timeout: float) -> Any:
        ...

    def discover(self) -> Discovery:
        ...

    def kubeconfig(self) -> KubeconfigDoc:
        ...

    def apply(self, res: Resource, obj: KubeObject, *, field_manager: str, force: bool = False,
              dry_run: bool = False, field_validation: str = "Strict") -> Response:
        ...

    def get(self, res: Resource, name: str, namespace: str | None = None) -> KubeObject | None:
        ...

    def create(self, res: Resource, obj: KubeObject, *, field_manager: str, dry_run: bool = False) -> Response:
        ...

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             metadata_only: bool = True, page_size: int | None = None) -> Iterator[KubeObject]:
        ...

    def delete(self, res: Resource, name: str, namespace: str | None, *, uid: str | None = None,
               propagation_policy: str = "Background", dry_run: bool = False) -> Response:
        ...

    def merge_patch(self, res: Resource, name: str, namespace: str | None, patch: MergePatch, *,
                    field_manager: str, dry_run: bool = False) -> Response:
        ...

    def json_patch(self, res: Resource, name: str, namespace: str | None, operations: Sequence[JsonPatchOperation], *,
                   field_manager: str) -> Response:
        ...


class EarlyReadSeam(Protocol):
    """Answers to reads sent before the run asked for them (``run/early.EarlyReads``)."""

    def record(self, req: ApiRequest) -> Future | None:
        """The future that the answer to ``req``, about to be sent, goes to; None: not recorded."""

    def take(self, req: ApiRequest) -> Future | None:
        """The recorded answer to ``req`` (once); None: send it."""
