"""Held-out figures across generations: one panel per check (the target, each guard), the
production pair's figure after each generation as a line, each candidate as a point with the
bootstrap interval of its difference drawn around the incumbent's figure (filled: promoted)."""

from pathlib import Path


def draw(states: list[dict], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gated = [s for s in states if "gate" in s["phases"]]
    names = list(dict.fromkeys(c["name"] for s in gated for c in s["phases"]["gate"]["checks"]))
    figure, axes = plt.subplots(1, max(1, len(names)), figsize=(3.2 * max(1, len(names)), 3.2), squeeze=False)
    for axis, name in zip(axes[0], names):
        production, xs = [], []
        for s in gated:
            check = next((c for c in s["phases"]["gate"]["checks"] if c["name"] == name), None)
            if check is None:
                continue
            n, promoted = s["generation"], s["phases"]["gate"]["promoted"]
            if not production:
                production.append(check["before"])
                xs.append(n - 1)
            production.append(check["after"] if promoted else check["before"])
            xs.append(n)
            ratio = name == "guard:latency"
            low, high = (check["before"] * check["low"], check["before"] * check["high"]) if ratio else (check["before"] + check["low"], check["before"] + check["high"])
            axis.errorbar([n + 0.08], [check["after"]], yerr=[[max(0.0, check["after"] - low)], [max(0.0, high - check["after"])]],
                          fmt="o", mfc="#4c72b0" if promoted else "white", color="#4c72b0" if check["passed"] else "#c44e52", capsize=3)
        axis.plot(xs, production, "-", color="#555555", label="production")
        axis.set_title(name.replace("guard:", "guard: ").replace("target:", "target: "), fontsize=9)
        axis.set_xlabel("generation")
        axis.set_xticks(xs)
    axes[0][0].set_ylabel("held-out figure (latency: s)")
    figure.suptitle(title, fontsize=10)
    figure.text(0.5, 0.01, "line: production after each generation · circle: the candidate with its bootstrap interval (filled: promoted; red: the check failed)", ha="center", fontsize=8, color="#555555")
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
