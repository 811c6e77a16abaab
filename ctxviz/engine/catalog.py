"""The model catalogue (resources/models.yaml): context windows and prices, injected from a data file.

Prices go stale, so every entry carries the page they were read from and the day they were checked.
A model string resolves only to its own entry (exactly, behind a provider prefix, or with a date or
release suffix): a model the catalogue does not know is unknown, never priced as a namesake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import yaml

from ..errors import LoadError
from ..resources import resource_path


@dataclass(frozen=True)
class ModelEntry:
    name: str
    provider: str
    context_window: int
    max_output: int = 0
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float = 0.0
    encoding: str = ""
    #: Prompt caching (see the catalogue's header): 0 write price = writes cost the plain input price.
    cache_write_per_mtok: float = 0.0
    #: Anthropic's 1-hour cache entries (2x input); 0: priced as the 5-minute ones.
    cache_write_1h_per_mtok: float = 0.0
    cache_ttl_seconds: int = 0
    min_cacheable_tokens: int = 0
    cache_granularity: int = 1
    #: Where the prices were read and when (every catalogue entry has both).
    source: str = ""
    checked: str = ""
    note: str = ""

    def input_cost(self, tokens: int) -> float:
        return tokens * self.input_per_mtok / 1_000_000


@lru_cache(maxsize=1)
def load_catalog() -> tuple[ModelEntry, ...]:
    path = resource_path("models.yaml")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LoadError(str(path), f"cannot read the model catalogue ({exc})") from None
    entries = []
    for i, item in enumerate(doc.get("models", []) if isinstance(doc, dict) else []):
        try:
            fields = dict(item)
            if "checked" in fields:
                fields["checked"] = str(fields["checked"])  # YAML reads 2026-11-26 as a date
            entries.append(ModelEntry(**fields))
        except (TypeError, ValueError) as exc:
            raise LoadError(str(path), f"models[{i}]: {exc}") from None
    return tuple(entries)


#: What may follow a catalogue name in a model string and still name the same model: a date
#: (-20250514, -2024-08-06), a release tag (-latest, -preview, -preview-05-20, -exp-...), or a
#: bracketed variant Claude Code writes (claude-opus-4-6[1m]).
_SUFFIX = re.compile(r"(-(\d{8}|\d{4}-\d{2}-\d{2}|latest|preview(-\d{2}-\d{2})?|exp(-[\w.-]*)?|v\d+(:\d+)?))*(\[\w+\])?$")


def find_model(name: str) -> ModelEntry | None:
    """The catalogue entry of a model string: the exact name, or a name behind a provider prefix
    (`openai/gpt-4o-mini`), or a name followed by a date or release suffix
    (`claude-sonnet-4-5-20250929`, `gemini-3-flash-preview`); None for any other model, so that a
    new model (`gpt-5.3-codex`) is never priced as an older one whose name it starts with."""
    if not name:
        return None
    lowered = name.lower()
    catalog = load_catalog()
    tail = lowered.split("/", 1)[-1].removeprefix("models/")
    for candidate in (lowered, tail):
        for entry in catalog:
            if entry.name == candidate:
                return entry
    matches = [e for e in catalog if tail.startswith(e.name) and _SUFFIX.fullmatch(tail[len(e.name):])]
    return max(matches, key=lambda e: len(e.name)) if matches else None
