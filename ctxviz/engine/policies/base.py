"""What every policy is: a named pure function of (session, parameters, cached counts) -> Plan."""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ...errors import ParameterError
from ..counting import CountingScheme, MessageMeasure, SessionMeasure, TokenCounts
from ..plan import Plan
from ..session import Session
from ..tokenizers import Tokenizer, get_tokenizer

P = TypeVar("P")


@dataclass(frozen=True)
class Policy(Generic[P]):
    name: str
    title: str
    params_type: type[P]
    measure_name: str
    measure: MessageMeasure
    default_tokenizer: str
    plan: Callable[[Session, P, TokenCounts], Plan]
    description: str = ""
    #: For frameworks whose estimator depends on the model (mnesis): model name -> tokenizer (or its name).
    tokenizer_for_model: Callable[[str], str | Tokenizer] | None = None
    #: The allocation part whose usage holds a zone's sent messages (a zone not listed: the part of
    #: the same name), so that dropping a message after the policy ran (pair safety) updates it.
    zone_parts: Mapping[str, str] = field(default_factory=dict)
    #: Brings the policy's own figures (usage split at a threshold, `extra`) up to date after
    #: messages were dropped from its plan; called with the plan, the session and its counts.
    refresh: Callable[[Plan, Session, TokenCounts | None], Plan] | None = None
    #: Who runs this strategy, as users know it ("LangChain", "missy"): `ctxviz policies` groups by it.
    framework: str = ""
    #: The framework version (or commit) whose source the policy reproduces.
    framework_version: str = ""
    #: The file (and function) of the framework's source the policy reproduces.
    source: str = ""
    #: How the framework counts tokens by default, in a user's words.
    counter: str = ""
    #: The parameters that decide *when* the policy acts (a token threshold, a message count), and
    #: those that decide *how much recent history survives*: the two knobs users tune everywhere.
    #: The app shows them first and draws the trigger; `compare` can align them across frameworks.
    trigger: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    #: Set where the framework calls an LLM (to summarise) and ctxviz's offline stand-in writes the text.
    stand_in: str = ""
    #: The framework's own compaction trigger, checked by `simulate` after each turn's build:
    #: (prefix session, its plan, params, counts, summarizer, turn, events) -> the Summary it puts in
    #: force (covering the ids it replaces; the latest absorbs earlier ones) or None. It appends an
    #: `Event` saying why it fired. Policies without one never summarise in a replay.
    compact: Callable[..., Any] | None = None
    #: For knobs that are not plain numbers with a `unit` in their field metadata (see
    #: engine/vocabulary.py): (params, session) -> the token level the trigger stands at, and
    #: (params, session, trigger_tokens, keep_messages, keep_tokens) -> (params, lines it could not set).
    trigger_level: Callable[..., int | None] | None = None
    align: Callable[..., tuple[Any, list[str]]] | None = None
    #: The figure a plan's trigger compares with that level, where it is not the plan's
    #: `totals.used`: Codex compares the last call's reported tokens, Gemini CLI the reported prompt,
    #: while what they send is counted by their own estimators (engine/vocabulary.trigger_count).
    trigger_count: Callable[[Plan], int] | None = None
    #: When the framework runs the policy, in a user's words: before each model call, once per
    #: call, after each agent invocation... (`ctxviz policies` says it; engine/steps.py replays it).
    schedule: str = "before each model call (the replay's steps: the log's calls, else the request before each reply)"
    #: Where the framework's agent calls the model, for a log that records no calls, when that is not
    #: simply before each assistant reply: (session) -> the session index of each request's last message.
    step_points: Callable[[Session], tuple[int, ...]] | None = None
    #: Counts the whole session at once, where one message's count depends on others (mnesis: a
    #: tool call's part holds its output); `measure` still counts a message on its own.
    measure_session: SessionMeasure | None = None
    #: The reason codes the plan gives its messages (engine/reason_codes.py): its vocabulary, which
    #: the app's filters offer. A message with no code gets its decision's generic one.
    reason_codes: tuple[str, ...] = ()

    def scheme(self, tokenizer: Tokenizer | str | None = None, model: str = "") -> CountingScheme:
        """The policy's counting scheme; a tokenizer override swaps only the text estimator."""
        if tokenizer is None:
            tokenizer = self.tokenizer_for_model(model) if self.tokenizer_for_model else self.default_tokenizer
        if isinstance(tokenizer, str):
            tokenizer = get_tokenizer(tokenizer)
        return CountingScheme(self.measure_name, self.measure, tokenizer, self.measure_session)

    def __post_init__(self) -> None:
        names = {f.name for f in param_fields(self.params_type)}
        unknown = [n for n in (*self.trigger, *self.keep) if n not in names]
        if unknown:
            raise ValueError(f"policy {self.name!r}: trigger/keep name unknown parameters {unknown}")

    def default_params(self) -> P:
        return self.params_type()

    def make_params(self, overrides: Mapping[str, Any] | None = None, base: P | None = None) -> P:
        return make_params(self.params_type, overrides or {}, base)


def param_fields(params_type: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(params_type) if f.init]


def field_type(params_type: type, name: str) -> Any:
    return _hints(params_type)[name]


@functools.lru_cache(maxsize=256)
def _hints(params_type: type) -> dict[str, Any]:
    """A parameter class's resolved annotations: resolving them compiles every string annotation, far
    too slow to repeat for each value a sweep or a slider sets."""
    return typing.get_type_hints(params_type)


#: The largest integer parameter: beyond 2**53 a budget times a fraction is no longer exact, and
#: the plan's parts would stop adding up.
MAX_EXACT_INT = 2**53


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) else f"{value:,}" if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= 60 else text[:57] + "..."


def coerce_value(params_type: type, name: str, value: Any) -> Any:
    """Turn a CLI string or a YAML value into the field's type, with a message naming the field."""
    kind = field_type(params_type, name)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "")):
            return None
        kind = args[0]
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "on", "1"):
            return True
        if text in ("false", "no", "off", "0"):
            return False
        raise ParameterError(f"{name}: expected true or false, got {value!r}")
    if kind is int:
        if isinstance(value, bool):
            raise ParameterError(f"{name}: expected an integer, got {value!r}")
        if isinstance(value, int):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        else:
            try:
                number = int(str(value).strip().replace(",", "").replace("_", ""))
            except ValueError:
                raise ParameterError(f"{name}: expected an integer, got {_short(value)}") from None
        if abs(number) > MAX_EXACT_INT:
            raise ParameterError(f"{name}: {_short(number)} is too large (at most {MAX_EXACT_INT:,}: the frameworks' budget "
                                 "arithmetic mixes integers and fractions, which is exact only up to 2**53)")
        return number
    if kind is float:
        if isinstance(value, bool):
            raise ParameterError(f"{name}: expected a number, got {value!r}")
        try:
            number = float(str(value).strip().rstrip("%")) / (100 if str(value).strip().endswith("%") else 1)
        except ValueError:
            raise ParameterError(f"{name}: expected a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ParameterError(f"{name}: expected a finite number, got {value!r}")
        return number
    if kind is str:
        return str(value)
    return value


def _nearest(name: str, known: set[str]) -> str:
    """` (did you mean 'fresh_tail_count'?)` for a typo of a parameter's name. Only a close one
    (0.8): names share words (`real_count` is 0.77 like `fresh_tail_count`, and is no typo of it)."""
    import difflib  # only for a name the policy does not take

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def make_params(params_type: type[P], overrides: Mapping[str, Any], base: P | None = None) -> P:
    """Build a parameter dataclass; unknown names and the framework's own ValueErrors become one line."""
    known = {f.name for f in param_fields(params_type)}
    values: dict[str, Any] = dataclasses.asdict(base) if base is not None else {}  # type: ignore[call-overload]
    for name, value in overrides.items():
        if name not in known:
            raise ParameterError(f"unknown parameter {name!r}{_nearest(name, known)}; this policy takes: {', '.join(sorted(known))}")
        values[name] = coerce_value(params_type, name, value)
    try:
        return params_type(**values)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


def params_dict(params: Any) -> dict[str, Any]:
    return dataclasses.asdict(params)
