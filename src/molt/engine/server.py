"""The engine's ASGI app: build the engine, run its loop for the app's lifetime, mount the routes."""

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from molt.engine.async_engine import AsyncEngine
from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.routes import install_error_handlers, router
from molt.engine.service import EngineService
from molt.models import LoadedModel

log = logging.getLogger("molt.engine")


def create_app(config: EngineConfig = EngineConfig(), loaded: LoadedModel | None = None) -> FastAPI:
    engine = AsyncEngine(LLMEngine(config, loaded))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine.start()
        log.info("engine ready: base %s, adapters %s", config.base_name, engine.engine.adapters.names() or "none")
        yield
        engine.stop()

    app = FastAPI(title="molt engine", lifespan=lifespan)
    app.state.service = EngineService(engine)
    install_error_handlers(app)
    app.include_router(router)
    return app
