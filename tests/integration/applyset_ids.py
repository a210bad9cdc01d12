"""The ApplySet ID formula, written independently of the product for cross-checking."""

import base64
import hashlib


def expected_id(name: str, namespace: str, kind: str, group: str) -> str:
    digest = hashlib.sha256(f"{name}.{namespace}.{kind}.{group}".encode()).digest()
    return "applyset-" + base64.urlsafe_b64encode(digest).decode().rstrip("=") + "-v1"
