"""The message filter language of the app's search box.

    role:user decision:dropped tokens>1000 "session.py" -zone:system

Terms are ANDed. `field:value` matches a column exactly (role, decision, category, zone, id, and
reason, which matches the reason code: `reason:after_cut`), in any spelling the app or the CLI
shows (case, spaces or underscores, "summarised" or "summarized", a category's label "Tool output"
or its name system_output, `role:harness` for a user turn the harness wrote; a value with a space
is quoted: `zone:"fresh tail"`), because a word copied from the table that found nothing read as
"no such message";
`field>N`, `>=`, `<`, `<=`, `=` compare a number (tokens, sent, index); a bare word or a
"quoted phrase" must appear in the message's id, its reason (the column's short label, as
"after cut #145", or the policy's sentence) or its text (case-insensitive); a leading `-`
negates any term. An unknown field, a value the field never holds, or a malformed term is
reported, not silently ignored.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .plan import DECISIONS, Plan
from .reasons import short_of
from .session import ROLES, Category
from .wording import spelled

TEXT_FIELDS = {"role": "role", "decision": "decision", "category": "category", "zone": "zone", "id": "id", "is": "decision",
               "reason": "reason_code"}
NUMBER_FIELDS = {"tokens": "tokens", "sent": "sent_tokens", "index": "index"}
OPERATORS: dict[str, Callable[[int, int], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
                                                    "=": operator.eq, ":": operator.eq}
_COMPARISON = re.compile(r"^([a-z_]+)(>=|<=|>|<|=|:)(.*)$")
#: Categories the app labels otherwise than their name (gui/theme.py's CATEGORY_LABELS; a test
#: keeps the two in step), as `canonical` writes the label.
CATEGORY_LABELS = {"tool_output": Category.SYSTEM_OUTPUT.value}


def canonical(column: str, value: str) -> str:
    """`value` of a text column in one spelling, whichever the user typed or the app showed: lower
    case, underscores for spaces and hyphens, "summarized" for "summarised", a category's name for
    its label. Both the typed value and every column value go through it."""
    word = "_".join(value.lower().replace("-", " ").split()).replace("summarised", "summarized")
    return CATEGORY_LABELS.get(word, word) if column == "category" else word


#: User turns the app's role column names by whose words they are (engine/voices.py): text the
#: agent's harness or a command wrote, which `role:user` must not find, as the role filter does not.
SHOWN_VOICES = frozenset({"harness", "observation"})
#: What a field can hold whatever the plan: its unknown values are said, not matched to nothing.
_KNOWN = {"decision": tuple(d.value for d in DECISIONS), "category": tuple(c.value for c in Category),
          "role": (*ROLES, *sorted(SHOWN_VOICES))}


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


#: A "quoted phrase" (its closing quote may not be typed yet), a field with a quoted value
#: (`zone:"fresh tail"`), or a run of non-blanks; each may be negated.
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(-?[a-z_]+:"[^"]*"?|\S+)')


def _unknown(name: str, column: str, value: str, plan: Plan | None) -> str:
    """Why `name:value` can match no message ("" when it can): the field never holds that value."""
    if column == "zone" and plan is not None:
        known: tuple[str, ...] = tuple(dict.fromkeys([*plan.zones, *sorted(plan.distinct.zones)]))
    else:
        known = _KNOWN.get(column, ())
    if not known or canonical(column, value) in {canonical(column, k) for k in known}:
        return ""
    if column == "category":
        names = [next((label for label, name in CATEGORY_LABELS.items() if name == k), k).replace("_", " ") for k in known]
    else:
        names = [spelled(k) for k in known]
    where, field = (" in this plan" if column == "zone" else ""), (name if name != "is" else "decision")
    if not value:
        return f"{name}: which {field}? ({', '.join(names)})"
    typed = f'{name}:"{value}"' if " " in value else f"{name}:{value}"
    return f"{typed}: no {field} is called {value!r}{where} ({', '.join(names)})"


def parse_query(text: str, plan: Plan | None = None) -> Query:
    """The query `text` says; given the `plan` it will filter, a zone that plan has no such zone
    of is said too (zones differ per policy; decisions and categories are the same for all)."""
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
                if value.startswith('"'):
                    value = value.strip('"')
                column = TEXT_FIELDS[name]
                unknown = _unknown(name, column, value, plan)
                if unknown:
                    return Query(tuple(terms), unknown)
                terms.append(Term(column, ":", canonical(column, value) if column != "id" else value.lower(), negate))
        elif match and match.group(2) == ":" and match.group(1).isidentifier() and not match.group(3).startswith("//"):
            known = ", ".join([*TEXT_FIELDS, *NUMBER_FIELDS])
            return Query(tuple(terms), f"unknown field {match.group(1)!r} (fields: {known}; quote text that has a colon)")
        else:
            terms.append(Term("", ":", body.lower(), negate))
    return Query(tuple(terms))


def shown_roles(roles: Sequence[str], voices: Sequence[str]) -> Sequence[str]:
    """The role column as the app shows it: a user turn the harness or a command wrote by its voice."""
    if len(voices) != len(roles):
        return roles
    return [voice if role == "user" and voice in SHOWN_VOICES else role for role, voice in zip(roles, voices, strict=True)]


def matching(plan: Plan, texts: Sequence[str], query: Query, rows: Sequence[int] | None = None,
             voices: Sequence[str] = ()) -> list[int]:
    """The message indices (of `rows`, default all) that every term of the query accepts; given each
    message's voice, `role:` reads the role column as shown (harness, observation)."""
    cols = plan.columns
    selected = list(range(len(plan.messages)) if rows is None else rows)
    for term in query.terms:
        if term.column == "":
            # The reason as the table shows it ("after cut #145") as well as the policy's sentence: the
            # tooltip says a word of the reason column is found. "summarised" and "summarized" both
            # find either (the app shows one, the codes and some sentences say the other).
            needle, reasons, codes, decisions, ids = str(term.value), cols.reason, cols.code, cols.decision, cols.id
            either = "summarised" in needle or "summarized" in needle
            if either:
                needle = needle.replace("summarised", "summarized")
            found: Iterable[str] = (f"{ids[r]}\n{short_of(codes[r], decisions[r].value, reasons[r])}\n{reasons[r]}\n{texts[r]}".lower()
                                    for r in selected)
            if either:
                found = (line.replace("summarised", "summarized") for line in found)
            keep = [needle in line for line in found]
        elif term.column in NUMBER_FIELDS.values():
            values, compare, number = getattr(cols, term.column), OPERATORS[term.op], int(term.value)
            keep = [compare(values[r], number) for r in selected]
        elif term.column == "id":
            keep = [cols.id[r].lower() == term.value for r in selected]
        else:
            values = (plan.reason_codes if term.column == "reason_code" else shown_roles(cols.role, voices) if term.column == "role"
                      else getattr(cols, term.column))
            spellings = {v: canonical(term.column, str(v)) for v in {values[r] for r in selected}}
            keep = [spellings[values[r]] == term.value for r in selected]
        selected = [r for r, k in zip(selected, keep, strict=True) if k != term.negate]
    return selected
