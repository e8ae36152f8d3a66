"""Routers: pick exactly one specialist label for a user turn, and say why."""

from molt.router.base import RouteDecision, RouteRequest, Router, guardrail_label
from molt.router.classifier import ClassifierRouter
from molt.router.label_scoring import LabelScoringRouter

__all__ = ["ClassifierRouter", "LabelScoringRouter", "RouteDecision", "RouteRequest", "Router", "guardrail_label", "make_router"]


def make_router(hcp, renderer, engine) -> Router:
    """The router the HCP selects (``router.kind``)."""
    if hcp.router.kind == "classifier":
        return ClassifierRouter(hcp)
    return LabelScoringRouter(hcp, renderer, engine)
