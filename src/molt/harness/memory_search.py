"""Meaning-based retrieval of remembered facts from the base's own hidden states.

The proxy's classifier router already keeps the first layers of the frozen base in memory
(``router.features.HiddenStateFeatures``) with the spread of its training texts. The same
mean-pooled states, standardised the same way, give a turn and each fact a vector; their cosine
ranks a fact like "dentist: Dr. Okafor" for "when are my teeth checked?" although no word is
shared. Nothing is downloaded and no second model is loaded.
"""

import threading
from collections import OrderedDict

import torch

from molt.router.features import RouteFeatures

CACHED = 4096
"""Fact texts whose vectors are kept: the same facts come back turn after turn."""


class HiddenStateSimilarity:
    def __init__(self, features: RouteFeatures):
        self.features = features
        self.cache: OrderedDict[str, torch.Tensor] = OrderedDict()
        self.lock = threading.Lock()

    def __call__(self, text: str, facts: list[str]) -> list[float]:
        """The cosine between ``text`` and each of ``facts``, in [-1, 1]."""
        with self.lock:
            have = {f: self.cache[f] for f in facts if f in self.cache}
        missing = [f for f in dict.fromkeys(facts) if f not in have]
        vectors = self.vectors([text, *missing])
        have.update(zip(missing, vectors[1:]))
        with self.lock:
            for fact in missing:
                self.cache[fact] = have[fact]
            while len(self.cache) > CACHED:
                self.cache.popitem(last=False)
        return (torch.stack([have[f] for f in facts]) @ vectors[0]).tolist()

    def vectors(self, texts: list[str]) -> torch.Tensor:
        """Unit vectors: the mean state, standardised by the router's calibration."""
        mean = self.features.hidden(texts)[:, : self.features.hidden.size // 2]
        return torch.nn.functional.normalize((mean - self.features.center) / self.features.scale, dim=1)
