"""The engine's ASGI app: build the engine, run its loop for the app's lifetime, mount the routes."""

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from molt.engine.async_engine import AsyncEngine
from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.routes import install_error_handlers, router
from molt.engine.service import EngineService
from molt.http_api import Guard
from molt.models import LoadedModel

log = logging.getLogger("molt.engine")


MAX_BODY_BYTES = 32 << 20


def create_app(config: EngineConfig = EngineConfig(), loaded: LoadedModel | None = None, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """``token``: the bearer token every /v1 request must carry (vLLM's ``--api-key``); None: no auth."""
    engine = AsyncEngine(LLMEngine(config, loaded))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine.start()
        log.info("engine ready: base %s, adapters %s", config.base_name, engine.engine.adapters.names() or "none")
        yield
        engine.stop()

    app = FastAPI(title="molt engine", lifespan=lifespan)
    app.state.service = EngineService(engine)
    app.add_middleware(Guard, prefixes=("/v1/",), max_body_bytes=max_body_bytes, token=token)
    install_error_handlers(app)
    app.include_router(router)
    return app
