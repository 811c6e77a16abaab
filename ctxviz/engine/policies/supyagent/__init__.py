"""supyagent (the seeds' page 001, policies.md section 2): how ctxviz does it.

- `context_manager.py`: ContextManager.build_messages_for_llm (`supyagent`), its counter
  (cl100k_base, 4 per message plus every string field, 765 per image) and its summary trigger.
- `replay.py`: its incremental replayer, with the summary message's count carried.

Tests: tests/test_supyagent.py; replays in tests/test_replay_incremental.py.
"""
