"""Meaning-based retrieval of remembered facts from the base's own hidden states.

The proxy's classifier router already keeps the first layers of the frozen base in memory
(``router.features``) with the spread of its training texts, and compares a turn with the
offered tools in that space. Facts use the same standardised mean states (``states_for``, cached
with the tools' texts): their cosine with the turn ranks "dentist: Dr. Okafor" for "when are my
teeth checked?" although no word is shared. Nothing is downloaded and no second model is loaded.
"""

import torch

from molt.router.features import RouteFeatures


class HiddenStateSimilarity:
    def __init__(self, features: RouteFeatures):
        self.features = features

    def __call__(self, text: str, facts: list[str]) -> list[float]:
        """The cosine between ``text`` and each of ``facts``, in [-1, 1]."""
        states = self.features.states_for({text, *facts})
        return torch.nn.functional.cosine_similarity(torch.stack([states[f] for f in facts]), states[text][None], dim=-1).tolist()
