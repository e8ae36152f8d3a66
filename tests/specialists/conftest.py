"""The bootstrapped stack (engine + proxy on the trained default HCP) for end-to-end tests."""

import pytest

from molt.engine.server import create_app as create_engine_app
from molt.http_server import ServerThread
from molt.models import load_model
from molt.stack import engine_config, proxy_with_page, stack_hcp


@pytest.fixture(scope="module")
def stack(bootstrapped):
    hcp, _ = bootstrapped
    with ServerThread(create_engine_app(engine_config(hcp), load_model(hcp.model.base))) as engine_url:
        served = stack_hcp(hcp, int(engine_url.rsplit(":", 1)[1]))
        with ServerThread(proxy_with_page(served)) as url:
            yield url
