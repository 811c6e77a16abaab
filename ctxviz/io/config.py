"""Parameter presets in YAML: `{policy, tokenizer, params: {...}}` or a flat mapping of parameters."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import LoadError
from .base import Fields, locate_line
from .source import read_source


@dataclass(frozen=True)
class Preset:
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    policy: str = ""
    tokenizer: str = ""
    description: str = ""


def load_preset(path: str | os.PathLike[str]) -> Preset:
    src = read_source(path, what="preset file")
    if src.kind == "jsonl":
        raise LoadError(src.path, "a preset is one YAML or JSON mapping, not JSON lines")
    doc = src.document
    top = Fields(src, doc)
    if top.has("params"):
        params = top.dict("params")
        policy, tokenizer, description = top.str("policy"), top.str("tokenizer"), top.str("description")
    else:
        params = {k: v for k, v in doc.items() if k not in ("policy", "tokenizer", "description")}
        policy, tokenizer, description = top.str("policy"), top.str("tokenizer"), top.str("description")
    for key, value in params.items():
        if not isinstance(key, str) or isinstance(value, (dict, list)):
            where = ("params", key) if top.has("params") else (key,)
            raise LoadError(src.path, "expected a parameter name with a single value", locate_line(src.text, where), str(key))
    return Preset(src.path, dict(params), policy, tokenizer, description)


def preset_line(preset: Preset, name: str) -> int | None:
    """The line of parameter `name` in the preset file, to point at it when its value is bad."""
    try:
        text = read_source(preset.path, what="preset file").text
    except LoadError:
        return None
    line = locate_line(text, ("params", name))
    return line if line and line > 1 else locate_line(text, (name,))


def dump_preset(policy: str, params: dict[str, Any], tokenizer: str = "") -> str:
    import yaml

    doc: dict[str, Any] = {"policy": policy}
    if tokenizer:
        doc["tokenizer"] = tokenizer
    doc["params"] = params
    return yaml.safe_dump(doc, sort_keys=False)
