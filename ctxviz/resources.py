"""Where ctxviz's bundled data lives (model catalogue, presets, tokenizer files, icons).

The data sits in the repository's top-level `resources/` folder; an editable install (the README's
way) finds it beside the package. `CTXVIZ_RESOURCES` points elsewhere for other layouts.
"""

from __future__ import annotations

import os
from pathlib import Path


def resources_dir() -> Path:
    override = os.environ.get("CTXVIZ_RESOURCES")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "resources"


def resource_path(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
