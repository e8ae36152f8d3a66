"""What users entered in UI surfaces, kept per conversation and surface (the ``surface_state``
table), so the web app shows it again after a reload. Writes go through the proxy's background
writer like every other row; a read first waits for the writes queued before it."""

import asyncio
from datetime import datetime, timezone

from sqlalchemy import Engine, select
from sqlalchemy.orm import sessionmaker

from molt.experience.writer import BackgroundWriter
from molt.registry.database import for_writing
from molt.registry.schema import SurfaceState

MAX_STATE_BYTES = 64_000
"""One surface's data model at most (a form's values, not files)."""


class SurfaceStates:
    def __init__(self, engine: Engine, writer: BackgroundWriter):
        self.writer, self.session = writer, sessionmaker(for_writing(engine))

    async def put(self, conversation: str, surface: str, data: dict) -> None:
        row = SurfaceState(conversation=conversation, surface=surface, data=data, updated_at=datetime.now(timezone.utc))
        await self.writer.submit(lambda session: session.merge(row))

    async def get(self, conversation: str) -> dict[str, dict]:
        """surfaceId → its data model, for one conversation."""
        await self.writer.aflush()
        return await asyncio.to_thread(self._read, conversation)

    def _read(self, conversation: str) -> dict[str, dict]:
        with self.session() as session:
            return {row.surface: row.data for row in session.scalars(select(SurfaceState).where(SurfaceState.conversation == conversation))}
