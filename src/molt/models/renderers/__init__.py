"""One renderer per chat-format family, matched by a marker string in the model's chat template."""

from molt.models.renderer import Renderer
from molt.models.renderers.chatml import ChatMLRenderer

RENDERERS: dict[str, tuple[str, type[Renderer]]] = {
    "chatml": ("<|im_start|>", ChatMLRenderer),
}
