"""Registry and lineage: every base, adapter revision, HCP version, pair, dataset, training job
and evaluation, with its parents; aliases that move, and a record of every move."""

from molt.registry.registry import Entry, Lineage, Move, Registry, RegistryError

__all__ = ["Entry", "Lineage", "Move", "Registry", "RegistryError"]
