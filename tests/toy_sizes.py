"""Training sizes for tests: small enough for CI, large enough for what each test checks."""

from molt.router.training import RouterRecipe

TINY_ROUTER = RouterRecipe(per_label=40, outside_per_label=40, layer=2)
"""The tiny random model's router: its accuracy is never checked, only that it is trained and served."""
