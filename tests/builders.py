"""Small hand-made sessions for golden tests."""

from __future__ import annotations

from ctxviz.engine.session import Message, Session, Summary, TextPart, default_category


def session(*turns: tuple[str, str], memory: tuple[str, ...] = (), learnings: tuple[str, ...] = (),
            summaries: tuple[Summary, ...] = (), system_prompt: str = "") -> Session:
    messages = tuple(
        Message(id=f"m{i}", index=i, role=role, parts=(TextPart(text),) if text else (), category=default_category(role))
        for i, (role, text) in enumerate(turns)
    )
    return Session(messages=messages, source="<test>", format="test", system_prompt=system_prompt,
                   memory=memory, learnings=learnings, summaries=summaries)
