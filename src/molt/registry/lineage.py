"""Drawing a record's ancestry: a tree in the terminal (rich) and a picture (matplotlib).

The tree repeats a record reached by two paths (a base is the parent of most things); the
picture draws each record once, at the depth of its longest path from the root, so shared
ancestors show as shared.
"""

from pathlib import Path

from rich.tree import Tree

from molt.registry.registry import Entry, Lineage

COLORS = {"pair": "#4c72b0", "adapter": "#55a868", "router": "#8172b2", "hcp": "#c44e52", "job": "#dd8452", "dataset": "#937860", "base": "#8c8c8c", "evaluation": "#da8bc3"}


def describe(entry: Entry) -> str:
    """One line: what the record is, by kind."""
    a = entry.attributes
    detail = {
        "adapter": lambda: f"rank {a.get('rank')}, {a.get('revision')}",
        "dataset": lambda: f"{a.get('rows')} rows from {a.get('source')}",
        "job": lambda: f"{a.get('recipe')}, {_count(_steps(a.get('metrics') or {}), 'step')}",
        "router": lambda: a.get("folder", ""),
        "evaluation": lambda: f"{a.get('verdict')}",
        "base": lambda: a.get("source", ""),
    }.get(entry.kind, lambda: "")()
    return f"{entry.kind} {entry.id} '{entry.name}'" + (f" ({detail})" if detail else "")


def _steps(metrics: dict) -> int:
    """A job's steps: recorded (SFT and RL both), else one loss per step (older SFT records)."""
    return int(metrics.get("steps", len(metrics.get("losses", []))))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def tree(node: Lineage, aliases: dict[str, str] | None = None) -> Tree:
    pointing = [name for name, target in (aliases or {}).items() if target == node.entry.id]
    label = (f"[dim]{node.role}:[/] " if node.role else "") + f"[bold]{describe(node.entry)}[/]" + (f"  [green]← {', '.join(pointing)}[/]" if pointing else "")
    root = Tree(label)
    for parent in node.parents:
        root.add(tree(parent, aliases))
    return root


def draw(node: Lineage, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth: dict[str, int] = {}
    entries: dict[str, Entry] = {}
    edges: set[tuple[str, str, str]] = set()

    def visit(n: Lineage, level: int) -> None:
        entries[n.entry.id] = n.entry
        depth[n.entry.id] = max(depth.get(n.entry.id, 0), level)
        for parent in n.parents:
            edges.add((n.entry.id, parent.entry.id, parent.role))
            visit(parent, level + 1)

    visit(node, 0)
    levels: dict[int, list[str]] = {}
    for record_id in sorted(entries, key=lambda i: (entries[i].kind, i)):
        levels.setdefault(depth[record_id], []).append(record_id)
    width = max(len(ids) for ids in levels.values())
    position = {record_id: ((i + 1) / (len(ids) + 1), -level) for level, ids in levels.items() for i, record_id in enumerate(ids)}
    figure, axes = plt.subplots(figsize=(max(8, 2.6 * width), 1.6 * (len(levels) + 1)))
    for child, parent, role in sorted(edges):
        (x0, y0), (x1, y1) = position[child], position[parent]
        axes.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18), arrowprops={"arrowstyle": "-|>", "color": "#999999"})
        # labels near the child, where a record's edges fan apart, so shared parents do not stack them
        x, y = x0 + 0.3 * (x1 - x0), (y0 - 0.18) + 0.3 * ((y1 + 0.18) - (y0 - 0.18))
        axes.text(x, y, role, fontsize=7, color="#555555", ha="center", va="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    for record_id, (x, y) in position.items():
        entry = entries[record_id]
        axes.text(x, y, f"{entry.kind}\n{entry.name}\n{record_id}", ha="center", va="center", fontsize=8, color="white",
                  bbox={"boxstyle": "round,pad=0.4", "facecolor": COLORS.get(entry.kind, "#333333"), "edgecolor": "none"})
    axes.set_xlim(0, 1)
    axes.set_ylim(-max(levels) - 0.6, 0.6)
    axes.axis("off")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
