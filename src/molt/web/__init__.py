"""The chat page molt up serves at /."""
