"""The fake API server every engine test starts from: empty but for the namespace ``shop``."""

import pytest
from fakeapi import FakeApi


@pytest.fixture
def api():
    fake = FakeApi()
    fake.add_namespace("shop")
    return fake
