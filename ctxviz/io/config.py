"""Parameter presets in YAML: `{policy, tokenizer, params: {...}}` or a flat mapping of parameters."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import LoadError
from .base import FieldPath, Fields, locate_line
from .source import read_source

#: A preset's own keys; the rest are the policy's parameters, under `params` or beside these.
PRESET_KEYS = ("policy", "tokenizer", "params", "description")


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
    if top.has("params"):  # beside `params`, any other key is a typo (without it, every key is a parameter the policy checks)
        top.refuse_unknown(PRESET_KEYS)
        params = top.dict("params")
        policy, tokenizer, description = top.str("policy"), top.str("tokenizer"), top.str("description")
    else:
        params = {k: v for k, v in doc.items() if k not in PRESET_KEYS}
        policy, tokenizer, description = top.str("policy"), top.str("tokenizer"), top.str("description")
    for key, value in params.items():
        if not isinstance(key, str) or isinstance(value, (dict, list)):
            where = ("params", key) if top.has("params") else (key,)
            raise LoadError(src.path, "expected a parameter name with a single value", locate_line(src.text, where), str(key))
    return Preset(src.path, dict(params), policy, tokenizer, description)


def preset_line(preset: Preset, name: str) -> int | None:
    """The line of parameter `name` in the preset file, to point at it when its value is bad."""
    line = field_line(preset.path, ("params", name))
    return line if line and line > 1 else field_line(preset.path, (name,))


def field_line(path: str, keys: FieldPath, what: str = "preset file") -> int | None:
    """The line of the field at `keys` in a preset or rules file, read again: only when its value
    is bad (an unknown tokenizer, model or policy), which the file's reader cannot judge."""
    try:
        text = read_source(path, what=what).text
    except LoadError:
        return None
    return locate_line(text, keys)


def dump_preset(policy: str, params: dict[str, Any], tokenizer: str = "") -> str:
    import yaml

    doc: dict[str, Any] = {"policy": policy}
    if tokenizer:
        doc["tokenizer"] = tokenizer
    doc["params"] = params
    return yaml.safe_dump(doc, sort_keys=False)
