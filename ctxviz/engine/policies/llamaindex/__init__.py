"""LlamaIndex (llama-index-core 0.14.25): how ctxviz does it.

- `chat_memory_buffer.py`: ChatMemoryBuffer.get (`llamaindex-chat-memory-buffer`) and its counter
  (cl100k_base over the space-joined window).
- `chat_summary_memory_buffer.py`: ChatSummaryMemoryBuffer.get (`llamaindex-chat-summary-memory-buffer`);
  `plan_records` step by step.
- `summary_columns.py`: the same decided in columns (what `plan` runs), the chat store kept per session.
- `replay.py`: the incremental replayers of both.

Tests: tests/test_policy_llamaindex.py against goldens recorded from LlamaIndex itself
(tests/golden/llamaindex) and tests/test_llamaindex_summary_columns.py; replays in tests/test_replay_trims.py and test_replay_summaries.py.
"""
