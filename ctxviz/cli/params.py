"""A policy and its parameters from the command line: --config, then --set, and the models it names."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..engine.policies import get_policy
from ..engine.tokenizers import encoding_name_for_model, get_tokenizer, known_model_names
from ..errors import LoadError, ParameterError, UnknownNameError


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    """KEY=VALUE pairs. The value is kept as the shell passed it (`--set "placeholder=   "` is three
    spaces: numbers and booleans ignore surrounding spaces anyway); a value wrapped whole in matching
    quotes (`--set 'placeholder="  x "'`) is what is between them."""
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = unquote(value)
    return out


def unquote(value: str) -> str:
    """The text between matching quotes that wrap the whole value (spaces outside them aside), else the value as given."""
    inner = value.strip()
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        return inner[1:-1]
    return value


def resolve_params(args: argparse.Namespace, policy_name: str | None, extra_sets: Sequence[str] = ()) -> tuple[str, Any, str | None]:
    """(policy, parameters, tokenizer) from --config, then --set (and a compare side's own sets)."""
    tokenizer = args.tokenizer
    params: Any = None
    if args.config:
        from ..io.config import load_preset, preset_line

        preset = load_preset(args.config)
        policy_name = policy_name or preset.policy or "missy"
        if preset.policy and preset.policy != policy_name:
            raise LoadError(preset.path, f"the preset is for policy {preset.policy!r}, not {policy_name!r}", field="policy")
        tokenizer = tokenizer or preset.tokenizer or None
        with blamed_on(preset.path, ("policy",) if preset.policy else ()):
            policy = get_policy(policy_name)
        try:
            params = policy.make_params(preset.params)
        except ParameterError as exc:
            bad = bad_parameter(preset.params, exc)
            raise LoadError(preset.path, str(exc), preset_line(preset, bad) if bad else None) from None
        if preset.tokenizer and not args.tokenizer:
            with blamed_on(preset.path, ("tokenizer",)):
                get_tokenizer(preset.tokenizer)
    policy_name = policy_name or "missy"
    policy = get_policy(policy_name)
    sets = {**_parse_sets(args.sets), **_parse_sets(extra_sets)}
    params = policy.make_params(sets, base=params) if sets else (params or policy.default_params())
    if tokenizer:
        get_tokenizer(tokenizer)  # fail on a bad name before loading a big file
    return policy_name, params, tokenizer


def bad_parameter(params: dict[str, Any], exc: ParameterError) -> str:
    """The parameter a policy's refusal names ("" when it names none of them)."""
    return next((k for k in params if str(exc).startswith((k, f"unknown parameter {k!r}"))), "")


@contextmanager
def blamed_on(path: str, keys: tuple[str, ...], what: str = "preset file") -> Iterator[None]:
    """A name a preset or rules file gives (its policy, tokenizer, cost model) refused as that
    file's error, `FILE:LINE: field: ...`, not as if the command line had said it. No `keys`: the
    name is not the file's, and the error stays as it is."""
    try:
        yield
    except (UnknownNameError, ParameterError) as exc:
        if not keys:
            raise
        from ..io.config import field_line

        raise LoadError(path, str(exc), field_line(path, keys, what), ".".join(keys)) from None


def check_model(model: str) -> str:
    """A model named on the command line must be one ctxviz knows (the catalogue, or a model
    tiktoken has an encoding for); a typo is an unknown model, not a model without a tokenizer."""
    if not model:  # most command lines: neither the catalogue nor its YAML is read
        return model
    from ..engine.catalog import find_model, load_catalog

    if find_model(model) is None and encoding_name_for_model(model) is None:
        import difflib  # only for a model name ctxviz does not know

        names = sorted({e.name for e in load_catalog()} | set(known_model_names()))
        close = difflib.get_close_matches(model, names, n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known models include {', '.join(e.name for e in load_catalog()[:6])}"
        raise UnknownNameError(f"unknown model {model!r}{hint} (add it to resources/models.yaml)")
    return model

