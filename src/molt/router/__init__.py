"""Routers: pick exactly one specialist label for a user turn, and say why."""

from molt.router.base import RouteDecision, Router, guardrail_label
from molt.router.label_scoring import LabelScoringRouter

__all__ = ["LabelScoringRouter", "RouteDecision", "Router", "guardrail_label"]
