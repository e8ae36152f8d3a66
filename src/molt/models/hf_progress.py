"""Turn transformers' own progress bars on or off for one block, restoring the previous state.

molt shows a bar where a user waits (GGUF dequantisation) and hides the ones that flash by
(loading a cached folder).
"""

from collections.abc import Iterator
from contextlib import contextmanager

from transformers.utils import logging as hf_logging


@contextmanager
def hf_progress_bars(enabled: bool) -> Iterator[None]:
    was_enabled = hf_logging.is_progress_bar_enabled()
    (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()
    try:
        yield
    finally:
        (hf_logging.enable_progress_bar if was_enabled else hf_logging.disable_progress_bar)()
