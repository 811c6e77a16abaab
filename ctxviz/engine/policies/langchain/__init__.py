"""LangChain (langchain 1.5.0, langchain-core 1.8.2, langchain-openai 1.7.4): how ctxviz does it.

- `counting.py`: LangChain's view of a message and its default counter, `count_tokens_approximately`.
- `model_count.py`: `ChatOpenAI.get_num_tokens_from_messages`, for `token_count_method="model"`.
- `trim.py`: `trim_messages` (`langchain-trim`).
- `summarization.py`: the `SummarizationMiddleware` (`langchain-summarization`); `summarization_columns.py`
  keeps its state per session and hands the plan over as columns (tests/test_summarization_columns.py).
- `context_editing.py`: the `ContextEditingMiddleware` with `ClearToolUsesEdit` (`langchain-context-editing`).
- `replay.py`: the incremental replayers of the three policies.

Tests: tests/test_policy_langchain.py against goldens recorded from LangChain itself
(tests/golden/langchain); replays in tests/test_replay_trims.py, test_replay_summaries.py and
test_replay_edits.py.
"""
