"""The bootstrapped stack (engine + proxy on the trained default HCP) for end-to-end tests."""

import pytest

from molt.http_server import ServerThread
from molt.stack import engine_thread, proxy_with_page


@pytest.fixture(scope="module")
def stack(bootstrapped):
    hcp = bootstrapped.hcp
    with engine_thread(hcp) as served, ServerThread(proxy_with_page(served)) as url:
        yield url
