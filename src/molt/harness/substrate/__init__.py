"""Persistent, sandboxed Python sessions: one per conversation, isolated by the operating system."""

from molt.harness.substrate.isolation import Isolation, Limits, isolation
from molt.harness.substrate.session import Outcome, Session, SessionError
from molt.harness.substrate.sessions import Substrate

__all__ = ["Isolation", "Limits", "Outcome", "Session", "SessionError", "Substrate", "isolation"]
