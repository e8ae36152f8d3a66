"""The harness's own parts that act for the model: sandboxed Python sessions (``substrate``),
helpers the model saves and promotes (``tools``), external services behind tool proxies
(``proxies``), and the per-turn choice between function calling and the REPL (``actions``)."""
