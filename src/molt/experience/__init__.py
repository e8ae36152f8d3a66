"""What the proxy keeps across restarts, in molt's database (the registry's): conversations and
their summaries, and the experience log of every turn with its feedback."""
