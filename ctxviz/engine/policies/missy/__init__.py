"""missy (the seeds' pages 000 and 003, policies.md sections 1 and 1.4-1.5): how ctxviz does it.

- `context_manager.py`: the ContextManager (`missy`): fresh tail, evictable prefix filled newest
  first, `## Relevant Memory` / `## Past Learnings` enrichment, chars/4 estimate.
- `consolidator.py`: the MemoryConsolidator (`missy-consolidator`): key facts at 80 % of the budget,
  the last 4 messages kept; `pipeline=true` for the later four-stage condenser pipeline.
- `replay.py`: both policies' incremental replayers.

Tests: tests/test_missy.py, tests/test_consolidator.py; replays in tests/test_replay_incremental.py.
"""
