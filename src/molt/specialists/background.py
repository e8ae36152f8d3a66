"""First start without waiting: ``molt up`` serves at once while the specialists and the router
train on a worker thread.

The stack starts on the shipped HCP, where the base answers for every label and the router
scores labels with the base. Each specialist, once trained, is loaded into the running engine
(``POST /v1/load_lora_adapter``) and the proxy routes to it from the next turn; the trained
router and the bootstrapped HCP file follow last. ``status`` says what is still training, for
``/health``, the page and the log (a line every tenth of a specialist's steps, so a piped log
shows progress too).
"""

import threading
from collections.abc import Callable

from molt.engine.adapter_client import for_hcp
from molt.hcp import HCP
from molt.proxy.service import ProxyService
from molt.specialists.bootstrap import Progress, bootstrap


class BackgroundBootstrap:
    def __init__(self, shipped: HCP, service: ProxyService, log: Callable[[str], None] = print, **bootstrap_options):
        """``bootstrap_options`` go to ``bootstrap`` (``recipes``, ``router``: toy sizes for tests)."""
        self.shipped, self.service, self.log, self.options = shipped, service, log, bootstrap_options
        self.status: dict[str, str] = {}
        """Label → "waiting", "training 12/77", "ready", or "failed: why"; "router" too."""
        self.serving = shipped
        """The HCP the proxy serves now: the shipped one plus every specialist trained so far."""
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, name="molt-bootstrap", daemon=True)
        self.steps: dict[str, int] = {}

    def start(self) -> "BackgroundBootstrap":
        self.status = {s.label: "waiting" for s in self.shipped.specialists} | {"router": "waiting"}
        self.service.training = self.status
        self.thread.start()
        return self

    def run(self) -> None:
        progress = Progress(on_specialist=self.started, on_step=self.stepped, on_trained=self.trained, on_router=self.routed)
        try:
            done = bootstrap(self.shipped, progress=progress, **self.options)
            self.service.switch_to(done.hcp, pair=done.pair.id)  # turns from now on are the registered pair's
            self.status["router"] = "ready"
            self.log(f"all specialists and the router are trained and served: pair {done.pair.id} ({done.alias}); the HCP is {done.path}")
        except Exception as e:  # serving goes on with what is ready
            for label, state in self.status.items():
                if state != "ready":
                    self.status[label] = f"failed: {e}"
            self.log(f"training stopped: {e}; serving goes on with what is ready")
        finally:
            self.done.set()

    def started(self, label: str, steps: int) -> None:
        self.steps[label] = steps
        self.status[label] = f"training 0/{steps}"
        self.log(f"training {label}: {steps} steps")

    def stepped(self, label: str, step: int, loss: float) -> None:
        total = self.steps[label]
        self.status[label] = f"training {step}/{total}"
        if step == total or step % max(1, total // 10) == 0:
            self.log(f"  {label}: step {step}/{total}, loss {loss:.3f}")

    def trained(self, label: str, revision: str) -> None:
        """Load the adapter into the engine, then let the proxy route to it."""
        for_hcp(self.shipped).load(label, revision)
        specialists = [s.model_copy(update={"adapter": label, "revision": revision}) if s.label == label else s for s in self.serving.specialists]
        self.serving = self.serving.model_copy(update={"specialists": specialists})
        self.service.switch_to(self.serving, keep_router=True)
        self.status[label] = "ready"
        self.log(f"{label} is trained and served ({revision})")

    def routed(self, info: dict) -> None:
        self.status["router"] = "ready"
        heldout = info.get("heldout")
        self.log("router trained" + (f": held-out accuracy {heldout['accuracy']:.1%}" if heldout else ""))
