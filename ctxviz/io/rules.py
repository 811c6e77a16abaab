"""The rules file of `ctxviz check`: what must hold for a session under a policy and settings.

    policy: missy                    # optional; default missy (or --policy)
    params: {total: 30000}           # optional; the policy's parameters
    tokenizer: o200k_base            # optional
    cost_model: claude-sonnet-4-5    # optional; for max_cost (default: the session's model)
    rules:
      max_tokens: 28000              # the plan's total at most N
      max_tokens_over_baseline: {baseline: plan.json, plus: 500}   # at most a saved plan's total + N
      max_part_tokens: {history: 20000}                            # an allocation part at most N
      max_tool_definition_tokens: 2000
      survive:                       # through turn T of the replay, still sent (from when it is said)
        - {message: first-user, through_turn: 40}                  # a pin rule: #N, id:, role:, first-user...
        - {text: "never push to main", through_turn: 96}           # any text, in a message or a summary
      max_compactions_per_100: 5
      min_retention: 0.8             # share of the session's anchors still sent at the last turn
      max_cost: 1.50                 # USD of input over the replay, with prompt caching

Read with `yaml.safe_load` through the loaders' source reader; a bad field is one line with its line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import LoadError
from .base import Fields
from .source import read_source

RULE_NAMES = ("max_tokens", "max_tokens_over_baseline", "max_part_tokens", "max_tool_definition_tokens", "survive",
              "max_compactions_per_100", "min_retention", "max_cost")


@dataclass(frozen=True)
class Survival:
    through_turn: int
    message: str = ""  # a pin rule
    text: str = ""

    @property
    def label(self) -> str:
        return f"message {self.message}" if self.message else f"text {self.text!r}"


@dataclass(frozen=True)
class Rules:
    path: str
    policy: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    tokenizer: str = ""
    cost_model: str = ""
    max_tokens: int | None = None
    baseline_used: int | None = None
    baseline_path: str = ""
    baseline_plus: int = 0
    max_part_tokens: dict[str, int] = field(default_factory=dict)
    #: Each `max_part_tokens` entry's line in the rules file, to name it when the policy has no such part.
    max_part_lines: dict[str, int | None] = field(default_factory=dict)
    max_tool_definition_tokens: int | None = None
    survive: tuple[Survival, ...] = ()
    max_compactions_per_100: float | None = None
    min_retention: float | None = None
    max_cost: float | None = None

    @property
    def needs_replay(self) -> bool:
        return bool(self.survive) or self.max_compactions_per_100 is not None or self.max_cost is not None


def _number(fields: Fields, key: str, kind: type = float) -> Any:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not float(value).is_integer()):
        raise fields.error(f"expected {'an integer' if kind is int else 'a number'}, got {value!r}", key)
    if value < 0:
        raise fields.error(f"must be >= 0, got {value!r}", key)
    return kind(value)


def load_rules(path: str | os.PathLike[str]) -> Rules:
    src = read_source(path, what="rules file")
    if src.kind == "jsonl":
        raise LoadError(src.path, "a rules file is one YAML or JSON mapping, not JSON lines")
    top = Fields(src, src.document)
    top.refuse_unknown(("policy", "params", "tokenizer", "cost_model", "rules", "description"))
    if not top.has("rules"):
        raise top.error("is required: the rules to check", "rules")
    rules = top.child("rules", top.dict("rules"))
    rules.refuse_unknown(RULE_NAMES, "rule")
    baseline_used, baseline_path, plus = None, "", 0
    if rules.has("max_tokens_over_baseline"):
        over = rules.child("max_tokens_over_baseline", rules.dict("max_tokens_over_baseline"))
        over.refuse_unknown(("baseline", "plus"))
        baseline_path = over.str("baseline", required=True)
        plus = _number(over, "plus", int) or 0
        resolved = baseline_path if os.path.isabs(baseline_path) else os.path.join(os.path.dirname(src.path), baseline_path)
        baseline_used = _baseline(resolved, over)
        baseline_path = resolved
    parts_fields = rules.child("max_part_tokens", rules.dict("max_part_tokens"))
    parts = {str(k): _number(parts_fields, str(k), int) for k in parts_fields.record}
    survive: list[Survival] = []
    for i, item in enumerate(rules.list("survive")):
        entry = rules.child("survive", []).child(i, item)
        entry.refuse_unknown(("message", "text", "through_turn"))
        message, text = entry.str("message"), entry.str("text")
        if bool(message) == bool(text):
            raise entry.error("give exactly one of message (a pin rule such as first-user) or text")
        turn = entry.get("through_turn")
        if turn is None:
            raise entry.error("is required", "through_turn")
        survive.append(Survival(_number(entry, "through_turn", int), message, text))
    retention = _number(rules, "min_retention")
    if retention is not None and retention > 1:
        raise rules.error(f"is a share between 0 and 1, got {retention}", "min_retention")
    params = top.dict("params")
    for key, value in params.items():
        if isinstance(value, (dict, list)):
            raise top.child("params", params).error("expected a single value", str(key))
    return Rules(src.path, top.str("policy"), dict(params), top.str("tokenizer"), top.str("cost_model"), _number(rules, "max_tokens", int),
                 baseline_used, baseline_path, plus, parts, {k: parts_fields.error("", k).line for k in parts},
                 _number(rules, "max_tool_definition_tokens", int), tuple(survive),
                 _number(rules, "max_compactions_per_100"), retention, _number(rules, "max_cost"))


def _baseline(path: str, where: Fields) -> int:
    """The total of a plan saved with `ctxviz plan --json`."""
    try:
        src = read_source(path, what="baseline plan")
    except LoadError as exc:
        raise where.error(f"cannot read the baseline ({exc})", "baseline") from None
    doc = src.document
    used = doc.get("totals", {}).get("used") if isinstance(doc, dict) and isinstance(doc.get("totals"), dict) else None
    if not isinstance(used, int) or isinstance(used, bool):
        raise LoadError(src.path, "not a plan saved with `ctxviz plan --json` (no totals.used)", field="totals.used")
    return used
