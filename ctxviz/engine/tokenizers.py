"""Token counting: each framework's own estimator and real tiktoken encodings, all offline.

A policy's decisions only match its framework's when it counts the way the framework does, so the
heuristics below reproduce each framework's rounding exactly; the tiktoken encodings give the real
count for the "does it really fit" check.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol, runtime_checkable

from ..errors import CtxvizError, UnknownNameError
from ..resources import resource_path
from .images import image_tokens


@runtime_checkable
class Tokenizer(Protocol):
    """Counts the tokens of one text. Implementations must be pure and thread-safe."""

    name: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class HeuristicTokenizer:
    """`len(text) // divisor`, floored, with the framework's own minimum and empty-text rule."""

    name: str
    divisor: int = 4
    minimum: int = 1
    empty_is_zero: bool = False
    description: str = ""
    #: Round up instead of down (Strands' `math.ceil(len(text) / 4)`).
    ceil: bool = False

    def count(self, text: str) -> int:
        if not text and self.empty_is_zero:
            return 0
        if self.ceil:
            return max(self.minimum, -(-len(text) // self.divisor))
        return max(self.minimum, len(text) // self.divisor)


# The expected hashes are tiktoken's own (tiktoken_ext/openai_public.py).
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_definition_lock = threading.Lock()


def _read_ranks(encoding_name: str) -> dict[bytes, int]:
    """Parse a vendored `.tiktoken.gz` file; tiktoken's own loader would copy it into a cache dir.
    Its modules are imported here: a plan under a policy with its own estimator reads no such file,
    and hashlib alone (OpenSSL) cost a fresh `ctxviz plan` ~3 ms."""
    import base64
    import gzip
    import hashlib

    path = resource_path("tokenizers", f"{encoding_name}.tiktoken.gz")
    try:
        contents = gzip.decompress(path.read_bytes())
    except OSError as exc:
        raise CtxvizError(f"{path}: cannot read the {encoding_name} tokenizer file ({exc})") from exc
    digest = hashlib.sha256(contents).hexdigest()
    if digest != _EXPECTED_SHA256[encoding_name]:
        raise CtxvizError(f"{path}: sha256 {digest} is not the hash tiktoken expects for {encoding_name}")
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def load_encoding(encoding_name: str) -> Any:
    """A `tiktoken.Encoding` built from the vendored ranks and tiktoken's own definition.

    tiktoken's definition functions call `load_tiktoken_bpe(url)`, which downloads; we call them
    with that loader swapped for the local file, so the name, regex and special tokens stay
    tiktoken's and nothing touches the network or the cache directory.
    """
    if encoding_name not in _EXPECTED_SHA256:
        raise UnknownNameError(f"unknown encoding {encoding_name!r}; available: {', '.join(ENCODINGS)}")
    import tiktoken
    import tiktoken_ext.openai_public as openai_public

    ranks = _read_ranks(encoding_name)
    with _definition_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *_args, **_kwargs: ranks
        try:
            definition = getattr(openai_public, encoding_name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**definition)


ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")

#: Set to "tiktoken" to count with tiktoken even where bpe-openai's counter is installed.
COUNTER_ENV = "CTXVIZ_COUNTER"


@cache
def fast_counter(encoding_name: str) -> Any:
    """bpe-openai's Rust counter for the encoding (`pip install 'ctxviz[fast]'`), or None.

    It counts without building the token list, 1.4-2x faster than tiktoken's `encode_ordinary` on
    session text, and its counts are tiktoken's (tests/test_tokenizers.py holds it to that on random
    text, special-token strings included). Its compiled module is loaded on its own: the package's
    `__init__` imports an HTTP stack and takes seconds, the module a millisecond; its BPE data is
    built in (the files ctxviz vendors came from its wheel), so nothing touches the network."""
    if os.environ.get(COUNTER_ENV, "").strip().lower() == "tiktoken":
        return None
    try:
        package = importlib.util.find_spec("bpe_openai")
        folder = (package.submodule_search_locations or [None])[0] if package is not None else None
        if folder is None:
            return None
        binary = next((f for f in sorted(os.listdir(folder)) if f.startswith("_bindings") and f.endswith((".so", ".pyd"))), None)
        if binary is None:
            return None
        spec = importlib.util.spec_from_file_location("bpe_openai._bindings", os.path.join(folder, binary))
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.tokenizer_for_encoding(encoding_name).count
    except Exception:  # an incompatible build: tiktoken counts instead
        return None


@dataclass(frozen=True)
class TiktokenTokenizer:
    """A real OpenAI encoding. `encode_ordinary` so text containing `<|endoftext|>` still counts."""

    encoding_name: str

    @property
    def name(self) -> str:
        return self.encoding_name

    def count(self, text: str) -> int:
        if not text:
            return 0
        fast = fast_counter(self.encoding_name)
        if fast is not None:
            return int(fast(text))
        return len(load_encoding(self.encoding_name).encode_ordinary(text))

    def count_many(self, texts: Iterable[str]) -> list[int]:
        fast = fast_counter(self.encoding_name)
        if fast is not None:
            return [int(fast(t)) if t else 0 for t in texts]
        enc = load_encoding(self.encoding_name)
        return [len(t) for t in enc.encode_ordinary_batch(list(texts))]


def gemini_text_estimate(text: str) -> float:
    """Gemini CLI's estimateTextTokens (utils/tokenCalculation.ts at 5411f11): 0.25 per ASCII UTF-16
    unit and 1.5 per other unit, or length / 4 above 100,000 units. Exact: every term is a
    multiple of 1/4."""
    if text.isascii():  # the common case, at C speed
        return len(text) / 4
    units = len(text.encode("utf-16-le", "surrogatepass")) // 2
    if units > 100_000:
        return units / 4
    ascii_units = len(text.encode("ascii", "ignore"))
    return ascii_units / 4 + (units - ascii_units) * 1.5


@dataclass(frozen=True)
class GeminiCliEstimator:
    """Gemini CLI's text estimate, floored (as estimateTokenCountSync floors its total)."""

    name: str = "gemini-cli"
    description: str = "Gemini CLI: 1/4 per ASCII character, 1.5 per other character (length/4 above 100,000), floored"

    def count(self, text: str) -> int:
        return math.floor(gemini_text_estimate(text))


@dataclass(frozen=True)
class CodexApproxTokenizer:
    """Codex's approx_token_count (codex-rs/core/src/truncate.rs): UTF-8 bytes / 4, rounded up."""

    name: str = "codex"
    description: str = "Codex: UTF-8 bytes / 4, rounded up"

    def count(self, text: str) -> int:
        return (len(text.encode("utf-8")) + 3) // 4


#: The frameworks' estimators, by the names the CLI and the app show.
HEURISTICS: Mapping[str, HeuristicTokenizer | GeminiCliEstimator | CodexApproxTokenizer] = {
    t.name: t
    for t in (
        HeuristicTokenizer("missy", 4, 1, False, "missy: max(1, len(text) // 4), the empty string counts 1"),
        HeuristicTokenizer("chars4", 4, 0, True, "len(text) // 4, no minimum (Penguin's fallback counter)"),
        HeuristicTokenizer("mnesis", 4, 1, True, "mnesis: 0 for empty text, else max(1, len // 4)"),
        HeuristicTokenizer("chars", 1, 0, True, "one per character: for estimators that sum characters before dividing"),
        HeuristicTokenizer("claude-heuristic", 3, 1, True, "mnesis' Claude estimate: 0 for empty, else max(1, len // 3)"),
        HeuristicTokenizer("strands", 4, 0, True, "Strands: ceil(len(text) / 4) (JSON is counted ceil(len / 2) by the policy)", ceil=True),
        GeminiCliEstimator(),
        CodexApproxTokenizer(),
    )
}


@dataclass(frozen=True)
class CharsPerTokenTokenizer:
    """`ceil(len(text) / chars_per_token)`: LangChain's count_tokens_approximately rounds each
    message up, with a float divisor (4.0, or 3.3 for Anthropic models in its summarization)."""

    name: str
    chars_per_token: float = 4.0
    description: str = ""

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


#: Estimators that divide by a float and round up, by name.
APPROXIMATE: Mapping[str, CharsPerTokenTokenizer] = {
    t.name: t
    for t in (
        CharsPerTokenTokenizer("langchain-approx", 4.0, "LangChain: ceil(characters / 4.0) per message"),
        CharsPerTokenTokenizer("langchain-approx-3.3", 3.3, "LangChain's summarization for Anthropic models: ceil(characters / 3.3)"),
    )
}


# tiktoken/model.py: exact names first, then the first matching prefix, in tiktoken's order.
_MODEL_TO_ENCODING: Mapping[str, str] = {
    **dict.fromkeys(("o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"), "o200k_base"),
    **dict.fromkeys(
        (
            "gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
            "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large",
        ),
        "cl100k_base",
    ),
}
_MODEL_PREFIX_TO_ENCODING: tuple[tuple[str, str], ...] = (
    ("o1-", "o200k_base"), ("o3-", "o200k_base"), ("o4-mini-", "o200k_base"), ("gpt-5", "o200k_base"),
    ("gpt-4.5-", "o200k_base"), ("gpt-4.1-", "o200k_base"), ("chatgpt-4o-", "o200k_base"),
    ("gpt-4o-", "o200k_base"), ("gpt-4-", "cl100k_base"), ("gpt-3.5-turbo-", "cl100k_base"),
    ("gpt-35-turbo-", "cl100k_base"), ("gpt-oss-", "o200k_harmony"), ("ft:gpt-4o", "o200k_base"),
    ("ft:gpt-4", "cl100k_base"), ("ft:gpt-3.5-turbo", "cl100k_base"), ("ft:davinci-002", "cl100k_base"),
    ("ft:babbage-002", "cl100k_base"),
)


def encoding_name_for_model(model: str) -> str | None:
    """tiktoken's model-to-encoding rule; None where tiktoken raises KeyError (Claude, Gemini...)."""
    if model in _MODEL_TO_ENCODING:
        return _MODEL_TO_ENCODING[model]
    for prefix, encoding in _MODEL_PREFIX_TO_ENCODING:
        if model.startswith(prefix):
            return encoding
    return None


def known_model_names() -> list[str]:
    """The model names tiktoken maps to an encoding (for suggestions when a name is unknown)."""
    return list(_MODEL_TO_ENCODING)


def real_encoding_for_model(model: str) -> str:
    """The encoding used for the real-count check: tiktoken's choice, else o200k_base (the cookbook's
    fallback). o200k_harmony is o200k_base plus chat special tokens, which plain text never hits."""
    name = encoding_name_for_model(model) or "o200k_base"
    return "o200k_base" if name == "o200k_harmony" else name


def get_tokenizer(name: str) -> Tokenizer:
    """A tokenizer by name: a framework heuristic, an encoding, or a model name (`gpt-4o`)."""
    if name in HEURISTICS:
        return HEURISTICS[name]
    if name in APPROXIMATE:
        return APPROXIMATE[name]
    if name in ENCODINGS:
        return TiktokenTokenizer(name)
    encoding = encoding_name_for_model(name)
    if encoding in ENCODINGS:
        return TiktokenTokenizer(encoding)
    known = ", ".join([*HEURISTICS, *APPROXIMATE, *ENCODINGS])
    raise UnknownNameError(f"unknown tokenizer {name!r}; use one of {known}, or an OpenAI model name such as gpt-4o")


def tokenizer_names() -> list[str]:
    return [*HEURISTICS, *APPROXIMATE, *ENCODINGS]


# --- OpenAI chat-format overhead (openai-cookbook "How to count tokens with tiktoken") ---

def chat_overhead_for_model(model: str) -> tuple[int, int]:
    """(tokens_per_message, tokens_per_name) as the cookbook sets them; 3/1 for every current model."""
    if model == "gpt-3.5-turbo-0301":
        return 4, -1
    return 3, 1


def count_openai_chat(messages: Iterable[Mapping[str, Any]], model: str = "gpt-4o", tokenizer: Tokenizer | None = None) -> int:
    """The cookbook's `num_tokens_from_messages`: per message 3 + encoded values (+1 per name), +3 priming.

    Only string values are encoded, as in the cookbook; parts lists and tool calls are counted from
    their text so the function never raises on real sessions, and image parts by OpenAI's tile
    rule (engine.images).
    """
    tok = tokenizer or TiktokenTokenizer(real_encoding_for_model(model))
    per_message, per_name = chat_overhead_for_model(model)
    total = 0
    for message in messages:
        total += per_message
        for key, value in message.items():
            if isinstance(value, str):
                total += tok.count(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, Mapping) and item.get("type") == "text":
                        total += tok.count(str(item.get("text", "")))
                    elif isinstance(item, Mapping) and item.get("type") == "image_url":
                        image = item.get("image_url")
                        image = image if isinstance(image, Mapping) else {"url": str(image or "")}
                        total += image_tokens(str(image.get("url", "")), str(image.get("detail", "")), model)
                    elif isinstance(item, Mapping) and "function" in item:
                        fn = item["function"]
                        total += tok.count(str(fn.get("name", ""))) + tok.count(str(fn.get("arguments", "")))
            if key == "name":
                total += per_name
    return total + 3
