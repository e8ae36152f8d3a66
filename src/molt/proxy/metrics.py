"""The proxy's Prometheus metrics: turns by specialist and route kind, and the time each hop
takes (route, waiting for summaries, answer, summary), so the hops' share of a turn is visible;
tool calls the harness refused, UI surfaces checked (sent back for repair, slips fixed, fallen
back to text), and turns cut from views to fit the context window."""

from collections import Counter, defaultdict

HOPS = ("turn", "route", "summary_wait", "answer", "summary")


class ProxyMetrics:
    def __init__(self):
        self.turns: Counter[tuple[str, str]] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.counts: defaultdict[str, int] = defaultdict(int)
        self.refused: Counter[str] = Counter()
        self.cuts: Counter[str] = Counter()
        self.surfaces: Counter[str] = Counter()

    def observe(self, hop: str, seconds: float) -> None:
        self.seconds[hop] += seconds
        self.counts[hop] += 1

    def turn(self, specialist: str, kind: str) -> None:
        self.turns[(specialist, kind)] += 1

    def refuse(self, reason: str) -> None:
        self.refused[reason] += 1

    def cut(self, how: str) -> None:
        self.cuts[how] += 1

    def surface(self, outcome: str) -> None:
        """valid, slip_repaired, sent_back (one per repair round) or fell_back."""
        self.surfaces[outcome] += 1

    def render(self, in_flight: int, queued: int) -> str:
        lines = ["# HELP molt_proxy_turns_total Turns answered, by specialist and how it was chosen", "# TYPE molt_proxy_turns_total counter"]
        lines += [f'molt_proxy_turns_total{{specialist="{s}",route="{k}"}} {n}' for (s, k), n in sorted(self.turns.items())]
        lines += ["# HELP molt_proxy_hop_seconds Time spent in each hop of a turn", "# TYPE molt_proxy_hop_seconds summary"]
        for hop in HOPS:
            lines += [f'molt_proxy_hop_seconds_sum{{hop="{hop}"}} {self.seconds[hop]:.6f}', f'molt_proxy_hop_seconds_count{{hop="{hop}"}} {self.counts[hop]}']
        lines += ["# HELP molt_proxy_refused_tool_calls_total Tool calls the harness sent back, by reason", "# TYPE molt_proxy_refused_tool_calls_total counter"]
        lines += [f'molt_proxy_refused_tool_calls_total{{reason="{r}"}} {n}' for r, n in sorted(self.refused.items())]
        lines += ["# HELP molt_proxy_surfaces_total UI surfaces checked before display, by outcome", "# TYPE molt_proxy_surfaces_total counter"]
        lines += [f'molt_proxy_surfaces_total{{outcome="{o}"}} {n}' for o, n in sorted(self.surfaces.items())]
        lines += ["# HELP molt_proxy_view_cuts_total Past turns collapsed or dropped to fit the context window", "# TYPE molt_proxy_view_cuts_total counter"]
        lines += [f'molt_proxy_view_cuts_total{{cut="{c}"}} {n}' for c, n in sorted(self.cuts.items())]
        lines += ["# HELP molt_proxy_turns_in_flight Turns being answered", "# TYPE molt_proxy_turns_in_flight gauge", f"molt_proxy_turns_in_flight {in_flight}"]
        lines += ["# HELP molt_proxy_turns_queued Turns waiting for a slot", "# TYPE molt_proxy_turns_queued gauge", f"molt_proxy_turns_queued {queued}"]
        return "\n".join(lines) + "\n"
