"""An HCP on the tiny model with the default specialists (no adapters: the base answers each)."""

import tomllib

from molt.hcp import default_hcp_path, parse_hcp


def tiny_hcp(engine_url: str):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"].update(base="tiny", engine_url=engine_url)
    data["generation"].update(max_tokens=16, temperature=0.0, summary_max_tokens=4)
    return parse_hcp(data)
