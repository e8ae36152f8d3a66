"""The default specialists: how each is trained from its data family, and the bootstrap."""
