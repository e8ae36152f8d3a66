"""Scoring model answers on the data families' held-out cases."""
