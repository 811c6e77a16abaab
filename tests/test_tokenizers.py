"""Token counting: offline tiktoken from the vendored files, the cookbook's chat overhead, model mapping."""

import json
import os
import subprocess
import sys

import pytest

from ctxviz.engine.tokenizers import (
    count_openai_chat,
    encoding_name_for_model,
    get_tokenizer,
    real_encoding_for_model,
)
from ctxviz.errors import UnknownNameError

COOKBOOK_MESSAGES = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
]


def test_tiktoken_is_great_is_six_tokens_in_o200k():
    tok = get_tokenizer("o200k_base")
    assert tok.count("tiktoken is great!") == 6
    from ctxviz.engine.tokenizers import load_encoding
    assert load_encoding("o200k_base").encode_ordinary("tiktoken is great!") == [83, 8251, 2488, 382, 2212, 0]


@pytest.mark.parametrize(("model", "expected"), [("gpt-4", 129), ("gpt-4-0613", 129), ("gpt-3.5-turbo", 129),
                                                  ("gpt-4o", 124), ("gpt-4o-mini", 124)])
def test_cookbook_chat_overhead(model, expected):
    assert count_openai_chat(COOKBOOK_MESSAGES, model) == expected


def test_special_token_text_counts_instead_of_raising():
    assert get_tokenizer("cl100k_base").count("a <|endoftext|> b") > 3


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base"), ("gpt-oss-120b", "o200k_harmony"), ("gpt-4o-2024-08-06", "o200k_base"),
    ("gpt-4-turbo", "cl100k_base"), ("gpt-5-mini", "o200k_base"), ("gpt-4.1", "o200k_base"), ("o3-mini", "o200k_base"),
    ("ft:gpt-4o:org", "o200k_base"), ("claude-sonnet-4-5", None),
])
def test_model_to_encoding_like_tiktoken(model, encoding):
    assert encoding_name_for_model(model) == encoding


def test_real_encoding_falls_back_to_o200k():
    assert real_encoding_for_model("claude-sonnet-4-5") == "o200k_base"
    assert real_encoding_for_model("gpt-oss-20b") == "o200k_base"


def test_tokenizer_by_model_name_and_unknown_name():
    assert get_tokenizer("gpt-4").name == "cl100k_base"
    with pytest.raises(UnknownNameError, match="unknown tokenizer 'nope'"):
        get_tokenizer("nope")


def test_heuristics_rounding():
    assert get_tokenizer("missy").count("") == 1
    assert get_tokenizer("chars4").count("") == 0
    assert get_tokenizer("mnesis").count("") == 0 and get_tokenizer("mnesis").count("a" * 40) == 10
    assert get_tokenizer("claude-heuristic").count("a" * 30) == 10


def test_counting_works_with_networking_disabled(tmp_path):
    """A fresh process with sockets disabled and an empty temp dir counts, and writes no cache."""
    code = """
import socket, sys
def refuse(*a, **k):
    raise OSError("network disabled in this test")
socket.socket = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from ctxviz.engine.tokenizers import get_tokenizer
print(get_tokenizer("o200k_base").count("tiktoken is great!"), get_tokenizer("cl100k_base").count("hello world"))
"""
    env = {**os.environ, "TMPDIR": str(tmp_path), "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"), "DATA_GYM_CACHE_DIR": str(tmp_path / "gym")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6", "2"]
    assert list(tmp_path.iterdir()) == []


def test_vendored_files_match_tiktokens_expected_hash():
    import gzip
    import hashlib

    from ctxviz.resources import resource_path
    expected = {"cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"}
    for name, digest in expected.items():
        data = gzip.decompress(resource_path("tokenizers", f"{name}.tiktoken.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == digest


def test_count_chat_messages_json_roundtrip():
    assert count_openai_chat(json.loads(json.dumps(COOKBOOK_MESSAGES)), "gpt-4o") == 124


def test_the_fast_counter_counts_exactly_what_tiktoken_counts() -> None:
    """bpe-openai's counter (the `fast` extra; installed with the test extra) is used only because
    its counts are tiktoken's `encode_ordinary` counts, special-token strings included."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ctxviz.engine.tokenizers import fast_counter, load_encoding

    counters = {name: fast_counter(name) for name in ("o200k_base", "cl100k_base")}
    if any(c is None for c in counters.values()):
        pytest.skip("bpe-openai is not installed (pip install 'ctxviz[fast]')")
    pieces = st.sampled_from(["a", " ", "\n", "\t", "é", "日本語", "🙂", "<|endoftext|>", "<|fim_prefix|>", "'s", "123", "\r\n", "\u200b",
                              "\x00", "İ", "x" * 60, " " * 40, "def f(x):", "https://e.com/a?b=1", "ǅ"])
    texts = st.one_of(st.text(max_size=200), st.lists(pieces, max_size=60).map("".join))

    @settings(max_examples=400, deadline=None)
    @given(text=texts)
    def same(text: str) -> None:
        for name, fast in counters.items():
            assert fast(text) == len(load_encoding(name).encode_ordinary(text)), (name, text)

    same()


def test_ctxviz_counter_tiktoken_turns_the_fast_counter_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxviz.engine.tokenizers import fast_counter

    fast_counter.cache_clear()
    monkeypatch.setenv("CTXVIZ_COUNTER", "tiktoken")
    try:
        assert fast_counter("o200k_base") is None
    finally:
        fast_counter.cache_clear()
