"""HCP version 1: the fields that recreate a molt runtime.

Every table refuses unknown keys, so a typo is an error, not a silently ignored setting.
"""

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from molt.models.tool_calls import TOOL_CALL_FORMATS

LABEL = r"^[a-z][a-z0-9_-]{0,31}$"
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
ROUTE_FIELDS = ("{labels}", "{descriptions}", "{user_text}")


def check_env_names(value):
    """``value`` (a name or a list of names) if each is an environment variable name: an HCP holds names of secrets, never values."""
    for name in [value] if isinstance(value, str) else value or []:
        if not ENV_NAME.match(name):
            raise ValueError(f"{name[:4]}… is not an environment variable name: an HCP holds names of secrets, never values")
    return value


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class Model(Table):
    base: str = "embedded"
    """Base model source (see `molt models info`)."""
    engine_url: str = "http://127.0.0.1:8001/v1"
    """OpenAI-compatible engine serving the base and the specialists' adapters."""
    engine_kind: Literal["molt", "vllm", "sglang"] = "molt"
    """Which engine that is: how adapters are loaded into it (``molt.engine.adapter_client``)."""
    context_window: int = Field(2048, ge=256)
    """Tokens of conversation an answer may see, prompt included."""
    engine_api_key_env: str | None = None
    """Environment variable holding the engine's bearer token (an engine started with --api-key); unset: none sent."""

    @field_validator("engine_api_key_env")
    @classmethod
    def _engine_key_name(cls, name: str | None) -> str | None:
        return check_env_names(name)


class Generation(Table):
    max_tokens: int = Field(512, ge=1)
    """Upper bound on an answer's tokens."""
    temperature: float = Field(0.7, ge=0)
    top_p: float = Field(0.95, gt=0, le=1)
    summary_max_tokens: int = Field(192, ge=1)
    """Upper bound on the per-turn summary an adapter writes for the others' views."""


class Specialist(Table):
    label: str = Field(pattern=LABEL)
    """The routing label, also the model name that bypasses routing."""
    description: str = Field(min_length=1)
    """What this specialist is for; shown to the router."""
    adapter: str | None = None
    """Adapter name on the engine; unset means the base answers for this label."""
    revision: str | None = None
    """The adapter revision this harness was validated with (e.g. molt://<run>/<name>)."""
    examples: list[str] = []
    """Requests that belong to this label (router training and prompts)."""
    prompt: str = ""
    """Instructions added after the identity prompt when this specialist answers (train and serve)."""


class Guardrail(Table):
    label: str = Field(pattern=LABEL)
    keywords: list[str] = Field(min_length=1)
    """Any of these words in the user's text (case-insensitive, whole words) forces the label."""


class Router(Table):
    kind: Literal["label_scoring", "classifier"] = "label_scoring"
    """Which router: 'classifier' (a trained classifier, `molt router train`) or 'label_scoring'
    (each label's likelihood after the route prompt, no training needed)."""
    default_label: str = Field(pattern=LABEL)
    """The label used when the router abstains."""
    classifier: str | None = None
    """The trained router (kind 'classifier'): a folder; relative paths are under $MOLT_HOME."""
    min_confidence: float = Field(0.5, ge=0, le=1)
    """Classifier: abstain (use default_label) when the best label's probability is below this."""
    scorer: str | None = None
    """Label whose adapter scores the labels; unset means the base."""
    margin: float = Field(0.5, ge=0)
    """Abstain (use default_label) when the best label's log-likelihood leads by less than this."""
    guardrails: list[Guardrail] = []

    @model_validator(mode="after")
    def _classifier_named(self) -> "Router":
        if self.kind == "classifier" and not self.classifier:
            raise ValueError("router.kind 'classifier' needs router.classifier (the folder `molt router train` wrote)")
        return self


class Prompts(Table):
    identity: str = Field(min_length=1)
    """System prompt every specialist answers under."""
    route: str
    """Route prompt; must contain {labels}, {descriptions} and {user_text} (quoted as data)."""
    summary: str = Field(min_length=1)
    """Asks the answering adapter for a short summary of its turn."""

    @field_validator("route")
    @classmethod
    def _route_fields(cls, route: str) -> str:
        missing = [f for f in ROUTE_FIELDS if f not in route]
        if missing:
            raise ValueError(f"the route prompt lacks {', '.join(missing)}")
        return route


class ToolProxy(Table):
    """An external service the model may use only through the harness (sandboxed sessions have no network)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    description: str = ""
    url: str = Field(pattern=r"^https?://")
    """The harness POSTs the call's arguments here as JSON, with an ``Idempotency-Key`` header."""
    parameters: dict = {"type": "object", "properties": {}}
    """JSON schema of the arguments the model gives."""
    fields: dict[str, Literal["ai", "noai"]] = {}
    """Visibility per field name: ``noai`` fields never enter the model's context (removed from
    results at any depth, refused as arguments)."""
    inject: dict[str, str] = {}
    """``noai`` arguments the harness fills itself: field → environment variable name (a secret's name, never its value)."""
    side_effect: bool = False
    """A call changes something: it is journaled under its idempotency key before it runs, so a retried call runs once."""
    compensate: str | None = None
    """The proxy that undoes a call of this one (given the same arguments)."""
    timeout_s: float = Field(10, gt=0)

    @field_validator("inject")
    @classmethod
    def _inject_names(cls, value: dict[str, str]) -> dict[str, str]:
        check_env_names(list(value.values()))
        return value

    @model_validator(mode="after")
    def _injected_are_noai(self) -> "ToolProxy":
        visible = [f for f in self.inject if self.fields.get(f) != "noai"]
        if visible:
            raise ValueError(f"tool proxy {self.name}: injected fields must be noai ({', '.join(visible)})")
        return self


class Tools(Table):
    call_format: str = "hermes"
    """How tool calls are written in the model's text."""
    allowlist: list[str] = []
    """Function names the specialists may call; empty allows whatever the client offers."""
    max_repairs: int = Field(1, ge=0, le=4)
    """Times a refused tool call (not offered, not allowed) goes back to the specialist before it answers with tools off."""
    proxies: list[ToolProxy] = []
    """External services the harness calls for the model (``molt.harness.proxies``)."""
    descriptions: dict[str, str] = {}
    """The harness's own description of a function, by name, used in place of the client's
    whenever that function is offered (an HCP edit ``molt evolve`` searches)."""

    def described(self, tools: list[dict] | None) -> list[dict] | None:
        """``tools`` with the harness's descriptions in place of the client's."""
        if not tools or not self.descriptions:
            return tools
        return [{**t, "function": {**t["function"], "description": self.descriptions[t["function"]["name"]]}}
                if (t.get("function") or {}).get("name") in self.descriptions else t for t in tools]

    @model_validator(mode="after")
    def _compensations_known(self) -> "Tools":
        names = [p.name for p in self.proxies]
        for proxy in self.proxies:
            if proxy.compensate is not None and proxy.compensate not in names:
                raise ValueError(f"tool proxy {proxy.name}: compensate names {proxy.compensate!r}, not a declared proxy")
        if len(set(names)) != len(names):
            raise ValueError("tool proxy names must be unique")
        return self

    @field_validator("call_format")
    @classmethod
    def _known_format(cls, name: str) -> str:
        if name not in TOOL_CALL_FORMATS:
            raise ValueError(f"unknown tool-call format {name!r}; known: {', '.join(sorted(TOOL_CALL_FORMATS))}")
        return name


class Actions(Table):
    """How the harness acts for a specialist (``molt.harness.actions``): plain function calls, or the
    sandboxed Python session (REPL) where many calls and the arithmetic between them fit in one step."""

    mode: Literal["auto", "function_calling", "repl"] = "auto"
    """Per turn: ``auto`` takes the REPL when the request holds one of ``repl_words`` (multi-step data work), else function calls."""
    repl_words: list[str] = ["total", "sum", "add up", "average", "mean", "how many", "count", "biggest", "largest", "convert", "per "]
    specialists: list[str] = ["agent"]
    """The specialists whose turns the harness acts in (it needs ``[[tools.proxies]]`` to act on)."""
    max_steps: int = Field(6, ge=1, le=32)
    """Model calls per turn before the specialist must answer with tools off."""
    sessions: int = Field(16, ge=1)
    """Sandboxed sessions kept running at once; the least recently used stops first (its files stay)."""
    cpu_s: int = Field(60, ge=1)
    memory_mb: int = Field(1024, ge=64)
    wall_s: float = Field(10, gt=0)
    processes: int = Field(32, ge=4)
    output_kb: int = Field(64, ge=1)
    weak_sandbox: bool = False
    """Run model code even where only the rlimits fallback isolates it (``molt doctor``); off: the REPL is refused there and function calls are used."""


class Environment(Table):
    api_key_env: str | None = None
    """Environment variable holding the bearer token clients must send; unset: no auth."""
    secrets: list[str] = []
    """Names of environment variables the runtime needs (never their values)."""

    @field_validator("api_key_env", "secrets")
    @classmethod
    def _names_only(cls, value):
        return check_env_names(value)


class Experience(Table):
    """What the proxy keeps in its database (``$MOLT_DB``, else SQLite in $MOLT_HOME), and for how long."""

    max_conversations: int = Field(10_000, ge=1)
    """Stored conversations (chat histories and Responses snapshots) kept; the oldest go first."""
    cached_conversations: int = Field(1_000, ge=1)
    """Of those, how many stay in memory; the rest are read back from the database when continued."""
    max_turns: int = Field(100_000, ge=1)
    """Turns kept in the experience log (with their feedback); the oldest go first."""
    max_age_days: float = Field(30, gt=0)
    """Conversations, summaries and logged turns older than this are deleted."""
    private: list[Literal["view", "answer", "tool_results", "comment"]] = []
    """Fields of the experience log that are never stored (``comment``: feedback comments)."""


class Learning(Table):
    """Continual mode (``molt up``): a learning worker runs a ``molt evolve`` generation when enough
    new experience has come in; a promoted pair is swapped into the running stack."""

    enabled: bool = True
    """Off here or with ``molt up --no-learn``."""
    target: str = Field("agent", pattern=LABEL)
    """The specialist each generation improves."""
    min_new_turns: int = Field(200, ge=1)
    """Logged turns since the last generation that start the next one."""
    poll_s: float = Field(30, gt=0)
    """How often the worker counts new turns, and the stack looks for a moved ``production`` alias."""
    contract: str | None = None
    """The external contract's file; unset: molt's default contract."""


EXTRACT_PROMPT = (
    "List the facts the user states about themselves in the message below: their name, home, work, family, health, preferences, budgets, plans and the people and places they use. One fact per line as `key: value`, the value in the user's own words. Facts about someone else are about that person (`sister's city: Rome`). Example: \"I'm vegetarian and my dentist is Dr. Ferreira\" gives\n"
    "diet: vegetarian\n"
    "dentist: Dr. Ferreira\n"
    "If the message states no fact about the user, answer `none`."
)
"""What the extraction hop asks (a worked example helps a small model keep the format)."""


class UserMemory(Table):
    """Per-user memory (``molt.harness.memory``): a request that names its ``user`` gets that
    user's relevant facts in the answering specialist's view."""

    enabled: bool = True
    budget_tokens: int = Field(96, ge=16)
    """Prompt tokens the facts may take in one view."""
    extract: str = EXTRACT_PROMPT
    """The extraction hop's prompt: after a turn's summary, the ``extract_with`` specialist reads
    the user's message under it and answers ``key: value`` lines (empty: no model hop; the
    ``my X is Y`` statements are still kept)."""
    extract_with: str = "chat"
    """The specialist whose adapter extracts facts."""
    extract_max_tokens: int = Field(64, ge=8)


class UI(Table):
    """Generative UI: the protocol and catalog genui surfaces use, and how hard the proxy tries to
    make a surface valid before showing it."""

    protocol: Literal["a2ui/v0.9"] = "a2ui/v0.9"
    catalog: str = "urn:molt:a2ui:catalog:1"
    """The catalog surfaces are created with (molt's, or A2UI's basic one); a specialist prompt
    names its components through ``{catalog}``."""
    repairs: int = Field(2, ge=0, le=5)
    """Times an invalid surface goes back to the model with its errors before the answer falls
    back to plain text."""
    specialist: str | None = "genui"
    """The specialist that answers with surfaces: in a history the proxy never saw (adopted), a
    turn whose answer holds a surface is taken as its turn, so it edits that surface from its own
    view (other turns go to the router's default label)."""

    @field_validator("catalog")
    @classmethod
    def _known_catalog(cls, catalog_id: str) -> str:
        from molt.ui.a2ui import catalog_ids

        if catalog_id not in catalog_ids():
            raise ValueError(f"unknown UI catalog {catalog_id!r}; known: {', '.join(catalog_ids())}")
        return catalog_id


class HCPv1(Table):
    hcp_version: Literal["1"]
    name: str = Field(min_length=1)
    description: str = ""
    model: Model = Model()
    generation: Generation = Generation()
    specialists: list[Specialist] = Field(min_length=1)
    router: Router
    prompts: Prompts
    tools: Tools = Tools()
    environment: Environment = Environment()
    actions: Actions = Actions()
    experience: Experience = Experience()
    learning: Learning = Learning()
    memory: UserMemory = UserMemory()
    ui: UI = UI()

    @model_validator(mode="after")
    def _labels_agree(self) -> "HCPv1":
        labels = [s.label for s in self.specialists]
        duplicated = sorted({label for label in labels if labels.count(label) > 1})
        if duplicated:
            raise ValueError(f"specialist labels must be unique; repeated: {', '.join(duplicated)}")
        used = [("router.default_label", self.router.default_label), ("router.scorer", self.router.scorer)]
        used += [(f"actions.specialists[{i}]", label) for i, label in enumerate(self.actions.specialists)]
        used += [(f"router.guardrails[{i}].label", g.label) for i, g in enumerate(self.router.guardrails)]
        used += [("learning.target", self.learning.target), ("memory.extract_with", self.memory.extract_with if self.memory.extract else None)]
        for where, label in used:
            if label is not None and label not in labels:
                raise ValueError(f"{where} is {label!r}, not a specialist label ({', '.join(labels)})")
        return self

    def specialist(self, label: str) -> Specialist:
        return next(s for s in self.specialists if s.label == label)

    def system_prompt(self, label: str) -> str:
        """The system prompt ``label`` answers under: the identity, then its own instructions
        (``{catalog}`` in them names the UI catalog and its components)."""
        extra = self.specialist(label).prompt
        if "{catalog}" in extra:
            from molt.ui.a2ui import catalog_prompt

            extra = extra.replace("{catalog}", f"{self.ui.catalog}: {catalog_prompt(self.ui.catalog)}")
        return f"{self.prompts.identity}\n\n{extra}" if extra else self.prompts.identity
