"""HCP, the Harness Context Protocol: one versioned TOML file that recreates a molt runtime
(base, engine, specialists, router, prompts, tools, limits, environment references)."""

from molt.hcp.contract import HCP, VERSIONS, HCPError, default_hcp_path, diff_hcp, load_hcp, parse_hcp, to_toml

__all__ = ["HCP", "VERSIONS", "HCPError", "default_hcp_path", "diff_hcp", "load_hcp", "parse_hcp", "to_toml"]
