"""Benchmarks that run molt and its peers side by side in one run and print ratios."""
