"""MinT tests run twice: against the in-process service and over HTTP (``molt mint serve``'s app)."""

import pytest

from molt.http_server import ServerThread
from molt.mint.clients import ServiceClient
from molt.mint.server import create_app
from molt.mint.service import LocalService


@pytest.fixture(scope="module", params=["in-process", "http"])
def service(request):
    if request.param == "in-process":
        yield ServiceClient()
        return
    with ServerThread(create_app(LocalService())) as url:
        yield ServiceClient(base_url=url)


@pytest.fixture(scope="module")
def local_service():
    """For the few tests that look inside the backend (gradients before the optimizer step)."""
    return ServiceClient()
