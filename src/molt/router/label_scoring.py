"""The label-scoring router: the log-likelihood of each label as the answer to the route prompt.

All labels are scored in one completions request (one prompt per label, sharing the route
prompt, so the engine's prefix cache prefills it once) through the OpenAI API with vLLM's
``prompt_logprobs``, so it runs against the molt engine or vLLM alike. The user's text is quoted
as data inside the route prompt, with the quote markers it contains defused. The best label wins
unless it leads the runner-up by less than the HCP's margin; then the default label answers.
It reads only the turn's text: the route prompt has no place for tools or history, and a rule
over them would name labels that an HCP need not have.
"""

import httpx

from molt.hcp import HCP
from molt.models.renderer import Renderer
from molt.router.base import RouteDecision, RouteRequest, guardrail_decision

QUOTE_MARKERS = {"<<<": "< < <", ">>>": "> > >"}


def quoted(user_text: str) -> str:
    for marker, safe in QUOTE_MARKERS.items():
        user_text = user_text.replace(marker, safe)
    return user_text


class LabelScoringRouter:
    def __init__(self, hcp: HCP, renderer: Renderer, engine: httpx.AsyncClient):
        self.hcp, self.renderer, self.engine = hcp, renderer, engine
        self.labels = [s.label for s in hcp.specialists]
        scorer = hcp.specialist(hcp.router.scorer) if hcp.router.scorer else None
        self.model = scorer.adapter if scorer is not None and scorer.adapter else hcp.model.base
        # The tokens an answer "<label>" adds after the generation prompt: body and end of turn.
        self.label_tokens = {}
        for label in self.labels:
            example = renderer.supervised_example([{"role": "user", "content": "?"}, {"role": "assistant", "content": label}])
            self.label_tokens[label] = [t for t, w in zip(example.tokens, example.weights) if w]

    def prompt(self, user_text: str) -> list[int]:
        route = self.hcp.prompts.route.format(
            labels=", ".join(self.labels),
            descriptions="\n".join(f"- {s.label}: {s.description}" for s in self.hcp.specialists),
            user_text=quoted(user_text),
        )
        return self.renderer.generation_prompt([{"role": "system", "content": self.hcp.prompts.identity}, {"role": "user", "content": route}])

    async def scores(self, user_text: str) -> dict[str, float]:
        prefix = self.prompt(user_text)
        body = {
            "model": self.model, "prompt": [prefix + self.label_tokens[label] for label in self.labels],
            "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0,
        }
        response = await self.engine.post("/completions", json=body)
        response.raise_for_status()
        choices = sorted(response.json()["choices"], key=lambda c: c["index"])
        scores = {}
        for label, choice in zip(self.labels, choices):
            positions = choice["prompt_logprobs"][len(prefix) :]
            scores[label] = sum(entry[str(token)]["logprob"] for entry, token in zip(positions, self.label_tokens[label]))
        return scores

    async def route(self, request: RouteRequest) -> RouteDecision:
        forced = guardrail_decision(self.hcp.router.guardrails, request.text)
        if forced is not None:
            return forced
        if len(self.labels) == 1:
            return RouteDecision(self.labels[0], "the only specialist", "only")
        scores = await self.scores(request.text)
        best, second = sorted(scores, key=scores.get, reverse=True)[:2]
        lead = scores[best] - scores[second]
        if lead < self.hcp.router.margin:
            default = self.hcp.router.default_label
            return RouteDecision(default, f"abstained: {best} leads {second} by {lead:.2f} < {self.hcp.router.margin}; default {default}", "abstained", scores)
        return RouteDecision(best, f"scored: {best} {scores[best]:.2f} vs {second} {scores[second]:.2f}", "scored", scores)
