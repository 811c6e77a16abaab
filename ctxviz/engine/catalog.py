"""The model catalogue (resources/models.yaml): context windows and prices, injected from a data file."""

from __future__ import annotations

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
    cache_ttl_seconds: int = 0
    min_cacheable_tokens: int = 0
    cache_granularity: int = 1

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
            entries.append(ModelEntry(**item))
        except TypeError as exc:
            raise LoadError(str(path), f"models[{i}]: {exc}") from None
    return tuple(entries)


def find_model(name: str) -> ModelEntry | None:
    """Exact name first, then the longest catalogue name the model string starts with or contains
    (so `claude-sonnet-4-5-20250929` and `openai/gpt-4o-mini` resolve)."""
    if not name:
        return None
    lowered = name.lower()
    catalog = load_catalog()
    for entry in catalog:
        if entry.name == lowered:
            return entry
    tail = lowered.split("/", 1)[-1]
    matches = [e for e in catalog if tail.startswith(e.name)] or [e for e in catalog if e.name in tail]
    return max(matches, key=lambda e: len(e.name)) if matches else None
