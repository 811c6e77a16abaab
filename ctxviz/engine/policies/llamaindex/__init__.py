"""LlamaIndex (llama-index-core 0.14.25): how ctxviz does it.

- `chat_memory_buffer.py`: ChatMemoryBuffer.get (`llamaindex-chat-memory-buffer`) and its counter
  (cl100k_base over the space-joined window).
- `chat_summary_memory_buffer.py`: ChatSummaryMemoryBuffer.get (`llamaindex-chat-summary-memory-buffer`).
- `replay.py`: the incremental replayers of both.

Tests: tests/test_policy_llamaindex.py against goldens recorded from LlamaIndex itself
(tests/golden/llamaindex); replays in tests/test_replay_trims.py and test_replay_summaries.py.
"""
