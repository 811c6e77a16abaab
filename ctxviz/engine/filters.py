"""The message filter language of the app's search box.

    role:user decision:dropped tokens>1000 "session.py" -zone:system

Terms are ANDed. `field:value` matches a column exactly (role, decision, category, zone, id, and
reason, which matches the reason code: `reason:after_cut`);
`field>N`, `>=`, `<`, `<=`, `=` compare a number (tokens, sent, index); a bare word or a
"quoted phrase" must appear in the message's id, reason or text (case-insensitive); a leading `-`
negates any term. An unknown field or a malformed term is reported, not silently ignored.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .plan import Plan

TEXT_FIELDS = {"role": "role", "decision": "decision", "category": "category", "zone": "zone", "id": "id", "is": "decision",
               "reason": "reason_code"}
NUMBER_FIELDS = {"tokens": "tokens", "sent": "sent_tokens", "index": "index"}
OPERATORS: dict[str, Callable[[int, int], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
                                                    "=": operator.eq, ":": operator.eq}
_COMPARISON = re.compile(r"^([a-z_]+)(>=|<=|>|<|=|:)(.*)$")


@dataclass(frozen=True)
class Term:
    column: str  # a PlanColumns field, or "" for free text
    op: str
    value: str | int
    negate: bool = False


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...] = ()
    error: str = ""

    @property
    def empty(self) -> bool:
        return not self.terms


#: A "quoted phrase" (its closing quote may not be typed yet), or a run of non-blanks; either may be negated.
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def parse_query(text: str) -> Query:
    terms: list[Term] = []
    for quote_negate, phrase, bare in _TOKEN.findall(text):
        if not bare:  # a quoted phrase is always text, colons and all
            if phrase:
                terms.append(Term("", ":", phrase.lower(), bool(quote_negate)))
            continue
        negate = bare.startswith("-") and len(bare) > 1
        body = bare[1:] if negate else bare
        match = _COMPARISON.match(body)
        if match and (match.group(1) in TEXT_FIELDS or match.group(1) in NUMBER_FIELDS):
            name, op, value = match.groups()
            if name in NUMBER_FIELDS:
                number = value.replace(",", "").replace("_", "")
                if not number.lstrip("-").isdigit():
                    return Query(tuple(terms), f"{name}{op}{value}: {name} compares with a whole number (tokens>1000)")
                terms.append(Term(NUMBER_FIELDS[name], op, int(number), negate))
            elif op != ":":
                return Query(tuple(terms), f"{body}: {name} takes {name}:VALUE")
            else:
                terms.append(Term(TEXT_FIELDS[name], ":", value.lower(), negate))
        elif match and match.group(2) == ":" and match.group(1).isidentifier() and not match.group(3).startswith("//"):
            known = ", ".join([*TEXT_FIELDS, *NUMBER_FIELDS])
            return Query(tuple(terms), f"unknown field {match.group(1)!r} (fields: {known}; quote text that has a colon)")
        else:
            terms.append(Term("", ":", body.lower(), negate))
    return Query(tuple(terms))


def matching(plan: Plan, texts: Sequence[str], query: Query, rows: Sequence[int] | None = None) -> list[int]:
    """The message indices (of `rows`, default all) that every term of the query accepts."""
    cols = plan.columns
    selected = list(range(len(plan.messages)) if rows is None else rows)
    for term in query.terms:
        if term.column == "":
            needle = str(term.value)
            keep = [needle in f"{cols.id[r]}\n{cols.reason[r]}\n{texts[r]}".lower() for r in selected]
        elif term.column in NUMBER_FIELDS.values():
            values, compare, number = getattr(cols, term.column), OPERATORS[term.op], int(term.value)
            keep = [compare(values[r], number) for r in selected]
        else:
            values = plan.reason_codes if term.column == "reason_code" else getattr(cols, term.column)
            keep = [str(values[r]).lower() == term.value for r in selected]
        selected = [r for r, k in zip(selected, keep, strict=True) if k != term.negate]
    return selected
