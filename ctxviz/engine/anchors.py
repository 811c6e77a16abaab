"""Anchors: the facts of a session an agent needs later, found mechanically in every message.

"What did the agent forget?" needs a list of what there was to remember that does not depend on
an LLM's judgement, so it is the same on every run and for every policy: file paths, URLs, commit
SHAs, issue and PR numbers, ids and order numbers, error lines and exception names, numbers with
units, quoted identifiers, every user request and the user's explicit instructions ("always",
"never", "must", "don't", "make sure", "only"). Retention (engine/retention.py) then asks which of
them still reach the model.

API (pure, no Qt; the app reads it):

- `anchors_of(session) -> AnchorIndex`: built once per session and cached by the session's
  identity (`STORE`, an `AnchorStore`, like counting.CountStore). What each message says is kept
  per message text (engine/anchor_cache.py, `MESSAGE_STORE`), so only messages no index has read
  before are extracted: a session read for the first time costs ~0.1 µs per character of text
  (about 1 s of CPU for 10,000 messages of a coding agent holding 8.7 MB, half of it extraction;
  0.1-0.4 s for a bundled sample); a grown session (a followed log after an append), a log re-read
  whole, or a replay's prefixes cost the new messages and one pass over the per-anchor lists (worth
  a worker thread in the app). `build_index(session, previous=index)` carries the index of the
  session this one grew from (`AnchorStore.get` finds it): only the new messages and the last
  `TAIL` (which a loader may still rebuild) are read, the older texts are searched only for the
  words the new anchors bring (engine/anchor_growth.py), and what the old messages name is taken
  word by word (`_Growth.holders`), not by a pass over them: about a fifth of a read from nothing
  at 10,000 messages.
- `AnchorIndex.anchors`: every `Anchor` (kind, value, first_index, first_id, messages, role),
  ordered by the message that first said it; `by_message[i]`: the anchor ids message i holds;
  `ids_in_text(text)`: the anchors a text (a summary, the system prompt, a truncated message)
  still carries, memoised per text.

What one text says (`extract`, `said_in`) is engine/anchor_extract.py's; which texts name an anchor
as a token, and what an index keeps to grow, engine/anchor_growth.py's.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .anchor_cache import MESSAGE_STORE, MessageAnchors, Said
from .anchor_extract import USER_KINDS, extract, norm, said_in
from .anchor_growth import TOKEN_SPLIT_RE, _grown_hits, _Growth, _phrases_in, _token_list, _tokens
from .gc_pause import without_gc
from .session import Session
from .voices import SWE_AGENT_FORMATS, voices_of
from .voices import voices_from as _voices
from .wording import clip


@dataclass(frozen=True)
class Anchor:
    """One fact: where it was first said, and every message it appears in (in any of its forms)."""

    id: int
    kind: str
    key: str
    #: As first written (an instruction is its sentence; a request the start of the user's own
    #: words; a path its longest form).
    value: str
    first_index: int
    first_id: str
    #: The role of the message that first said it.
    role: str
    #: Every session message index it appears in, in order.
    messages: tuple[int, ...]
    #: The first user turn's request (or, for a turn that is only instructions, its instructions).
    opening: bool = False
    #: Whose words first said it (engine/voices.py): user, quoted, harness, observation, assistant, tool, system.
    voice: str = ""
    #: The first message in which the user's own (or pasted) words name it, else -1.
    user_named: int = -1

    @property
    def needle(self) -> str:
        """What a text must contain (normalised) to carry an instruction or request on."""
        return self.key if self.kind in ("instruction", "requirement") else (norm(self.value.rstrip("…"))[:60] if self.kind == "request" else self.key)

    def label(self, width: int = 72) -> str:
        """The anchor as a "lost" list shows it: `code`, #issue, 'what the user said'."""
        if self.kind in USER_KINDS or self.kind == "requirement":
            return f"'{clip(self.value, width)}'"
        if self.kind in ("path", "quoted", "commit", "exception", "id", "url"):
            return f"`{self.value}`"
        return self.value

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "first_index": self.first_index, "first_id": self.first_id, "role": self.role,
                "voice": self.voice, "messages": list(self.messages), **({"opening": True} if self.opening else {})}


ANCHOR_FIELDS = tuple(f.name for f in dataclasses.fields(Anchor))


def make_anchor(*values: Any) -> Anchor:
    """`Anchor(*values)` without the frozen dataclass's `__init__` (one `object.__setattr__` per
    field): an index of 10,000 messages makes thousands, and a forked child's are rebuilt from
    their fields (engine/anchors_ahead.py). The same object: its fields in its `__dict__`."""
    anchor = object.__new__(Anchor)
    anchor.__dict__.update(zip(ANCHOR_FIELDS, values, strict=True))
    return anchor


def _order(anchor: Anchor) -> tuple[int, int, int]:
    """User requests and instructions first (the opening request at the top), then by first said."""
    rank = 0 if anchor.opening else (1 if anchor.kind == "instruction" else (2 if anchor.kind == "request" else 3))
    return (rank, anchor.first_index, anchor.id)


def ordered(anchors: Iterable[Anchor]) -> list[Anchor]:
    return sorted(anchors, key=_order)


#: Kinds a single token can carry, found in a text by its token set (`AnchorIndex.mentions`).
TOKEN_KINDS = frozenset({"path", "url", "issue", "id", "commit", "exception", "quoted"})


def _path_forms(path: str) -> str:
    """A path's form for comparing: lower case, without `./`, `~/` or a trailing slash."""
    p = path.lower().rstrip("/")
    while p.startswith("./"):
        p = p[2:]
    if p.startswith("~/"):
        p = p[2:]
    return p


class AnchorIndex:
    """Every anchor of one session, with the per-message lists retention reads on every re-plan.

    `mentions(text)` is the one matcher: it says which anchors a text carries, whether the text is
    a message (`by_message`), a summary, the system prompt or a cut message's sent part, and `where`
    asks it about a term that names an anchor. An anchor is carried by a text that yields the same
    key, names it in any of its forms as a token (unquoted in code, a path's relative or absolute
    form), or, for the user's words, repeats them."""

    def __init__(self, session: Session, anchors: tuple[Anchor, ...], by_message: tuple[tuple[int, ...], ...],
                 forms: dict[str, int] | None = None, aliases: dict[tuple[str, str], int] | None = None,
                 voices: tuple[str, ...] = (), phrases: dict[str, list[tuple[int, str]]] | None = None) -> None:
        self.session = session
        self.anchors = anchors
        self.by_message = by_message
        self.by_key: dict[tuple[str, str], int] = {(a.kind, a.key): a.id for a in anchors}
        self.by_key.update(aliases or {})
        #: Every single-token form (lower case) -> the anchor it names.
        self.forms: dict[str, int] = forms if forms is not None else {a.key: a.id for a in anchors if a.kind in TOKEN_KINDS and " " not in a.key}
        #: Anchors that are no single token (`import re`, `super().__call__(value)`, an error line), by their
        #: longest token: a text holding that token is searched for the whole value.
        self.phrases: dict[str, list[tuple[int, str]]] = phrases if phrases is not None else phrases_of(anchors)
        self.voices = voices or voices_of(session)
        self.first_indices: tuple[int, ...] = tuple(a.first_index for a in anchors)
        self.user_anchors: tuple[Anchor, ...] = tuple(a for a in anchors if a.kind in USER_KINDS or a.kind == "requirement")
        # Each user anchor's needle, normalised once (a replay asks every summary text for all of them).
        self._needles: tuple[tuple[int, str], ...] = tuple((a.id, n) for a in self.user_anchors if (n := a.needle))
        self._texts: dict[tuple[str, str], frozenset[int]] = {}
        #: Each anchor's rank among the lost and its sort key (engine/ranking.py), by anchor id, once asked:
        #: a replay ranks the same anchors at every loss.
        self.rank_memo: dict[int, Any] = {}
        #: Every anchor's place in rank order and its rank, by anchor id (`ranking.ranked_often`), once asked.
        self.rank_order: tuple[list[int], list[Any]] | None = None
        self._lock = threading.Lock()
        #: What building the index of this session grown by appended messages starts from (`build_index`).
        self._growth: _Growth | None = None

    def __len__(self) -> int:
        return len(self.anchors)

    def token_hits(self, text: str, tails: bool = False) -> set[int]:
        """The anchors a text names as tokens, in any form: a set intersection at C speed (the forms
        include each with a trailing dot or dash, and a path's unambiguous tails), then the phrases
        whose longest token the text holds. With `tails`, a path form never seen in the session
        (a summary's) is looked up by its shorter tails too."""
        forms = self.forms
        if not forms and not self.phrases:
            return set()
        lowered = text.lower()
        tokens = _tokens(lowered)
        hits = {forms[t] for t in tokens & forms.keys()}
        if self.phrases:
            for t in tokens & self.phrases.keys():
                hits.update(k for k, phrase in self.phrases[t] if phrase in lowered)
        if tails:
            for t in tokens - forms.keys():
                if "/" in t:
                    p = _path_forms(t.rstrip(".-"))
                    while "/" in p:
                        p = p.split("/", 1)[1]
                        k = forms.get(p)
                        if k is not None:
                            hits.add(k)
                            break
        return hits

    def mentions(self, text: str, role: str = "assistant") -> frozenset[int]:
        """The anchors a text carries (see the class docstring). Memoised per text (summaries and
        the system prompt recur turn after turn)."""
        memo = (role, text)
        found = self._texts.get(memo)
        if found is not None:
            return found
        by_key = self.by_key
        ids = {by_key[(kind, key)] for kind, key, _ in extract(text, role) if (kind, key) in by_key}
        ids |= self.token_hits(text, tails=True)
        if self._needles:
            flat = norm(text)
            ids.update(k for k, needle in self._needles if needle in flat)
        found = frozenset(ids)
        with self._lock:
            if len(self._texts) > 20_000:
                self._texts.clear()
            self._texts[memo] = found
        return found

    #: The same matcher under its earlier name.
    ids_in_text = mentions

    def find(self, term: str) -> Anchor | None:
        """The anchor a search term names exactly (its value, key or any form), else None."""
        t = term.strip().lower()
        if not t:
            return None
        k = self.forms.get(t)
        if k is None and "/" in t:
            k = self.forms.get(_path_forms(t))
        if k is not None:
            return self.anchors[k]
        for a in self.anchors:
            if a.value.lower() == t or a.key == t or (a.kind in USER_KINDS and a.key == norm(t)):
                return a
        return None

    def search(self, term: str) -> list[Anchor]:
        """Anchors whose value contains `term` (case-insensitive)."""
        needle = term.lower()
        return [a for a in self.anchors if needle in a.value.lower()]


#: Words too common to pick the texts a phrase is searched in.
COMMON_WORDS = frozenset("the and for with from that this not you are was but all can has have will its use get set run def let var".split())
#: Kinds whose value, when it is more than one token, is searched for as it is written.
PHRASE_KINDS = frozenset({"path", "url", "issue", "id", "commit", "exception", "quoted"})


def phrases_of(anchors: Iterable[Anchor]) -> dict[str, list[tuple[int, str]]]:
    """Multi-token anchors by their longest token (see `AnchorIndex.phrases`)."""
    return _phrases((a.id, a.kind, a.value) for a in anchors)


def _phrases(anchors: Iterable[tuple[int, str, str]]) -> dict[str, list[tuple[int, str]]]:
    """`phrases_of` from each anchor's (id, kind, value): `build_index` asks it before its anchors exist."""
    out: dict[str, list[tuple[int, str]]] = {}
    for ident, kind, value in anchors:
        if kind not in PHRASE_KINDS:
            continue
        value = value.lower().rstrip("…")
        tokens = [t for t in TOKEN_SPLIT_RE.split(value) if t]
        if len(tokens) > 1 or (tokens and tokens[0] != value):
            trigger = max(tokens, key=len)
            if len(trigger) >= 3 and trigger not in COMMON_WORDS:
                out.setdefault(trigger, []).append((ident, value))
    return out


def _merge_paths(first: dict[tuple[str, str], list[Any]]) -> dict[tuple[str, str], tuple[str, str]]:
    """One fact, one anchor: `spotter.css`, `priv/static/assets/spotter.css` and its absolute form
    name one file. Each path whose form is a component suffix of longer paths that all end in the
    same longest one is folded into it; a suffix two different files share (`config.ex` of two
    folders) stays its own anchor. Returns old key -> new key."""
    forms = {key: _path_forms(entry[2]) for (kind, key), entry in first.items() if kind == "path"}
    if len(forms) < 2:
        return {}
    owners: dict[str, set[str]] = {}
    for key, form in forms.items():
        parts = form.lstrip("/").split("/")
        for i in range(1, len(parts)):
            owners.setdefault("/".join(parts[i:]), set()).add(key)
    merged: dict[tuple[str, str], tuple[str, str]] = {}
    for key, form in forms.items():
        longer = owners.get(form.lstrip("/"))
        if not longer:
            continue
        tops = {k for k in longer if not owners.get(forms[k].lstrip("/"))}
        if len(tops) == 1:
            top = next(iter(tops))
            if top != key:
                merged[("path", key)] = ("path", top)
    return merged


#: The voices whose words are the user's (typed or pasted).
_USERS = frozenset({"user", "quoted"})
#: Messages at the end of a session an index's growth state leaves out (see `_Growth`).
TAIL = 16


def _said(messages: Sequence[Any], texts: Sequence[str], voices: Sequence[str], swe: bool, store: MessageAnchors, start: int, stop: int
          ) -> list[Said]:
    """What messages[start:stop] say, from `store` (read there, or kept from before)."""
    rest = messages[start:stop]
    return store.said(_keys(rest, voices[start:stop], texts[start:stop], swe), said_in)


def _read(rest: Sequence[Any], saids: Sequence[Said], first: dict[tuple[str, str], list[Any]], opening_done: bool) -> bool:
    """What the messages `rest` say (`saids`, one per message), added to `first` (kind, key -> the
    anchor's fields before folding); returns whether the opening request has been said."""
    for m, (said, user_turn) in zip(rest, saids, strict=True):
        i = m.index
        for by, found in said:
            users = by in _USERS
            for kind, key, value in found:
                k = (kind, key)
                entry = first.get(k)
                if entry is None:
                    opening = not opening_done and users and kind in USER_KINDS
                    entry = first[k] = [kind, key, value, i, m.id, m.role, [i], opening, by, -1]
                elif entry[6][-1] != i:
                    entry[6].append(i)
                if users and entry[9] < 0:
                    entry[9] = i
        if user_turn:
            opening_done = True
    return opening_done


def said_keys(session: Session, start: int, stop: int) -> list[tuple[str, str, bool, str]]:
    """The keys under which `build_index` looks up what messages[start:stop] say in its store
    (anchor_cache.MessageAnchors.said, computed by `said_in`): a caller that reads some messages
    ahead, elsewhere, keeps them under the same keys."""
    rest = session.messages[start:stop]
    return _keys(rest, voices_of(session)[start:stop], [m.text for m in rest], session.format in SWE_AGENT_FORMATS)


def _keys(messages: Sequence[Any], voices: Sequence[str], texts: Sequence[str], swe: bool) -> list[tuple[str, str, bool, str]]:
    """The store's keys of these messages (each with its voice and text)."""
    return [(voice, m.role, swe, text) for m, voice, text in zip(messages, voices, texts, strict=True)]


def _grows(previous: AnchorIndex | None, session: Session) -> bool:
    """Whether `session` holds the messages `previous`'s growth state read (the same objects): the
    last few messages may differ, or more may follow."""
    growth = previous._growth if previous is not None else None
    if growth is None or previous is None or previous.session.format != session.format:
        return False
    old, new, n = growth.messages, session.messages, growth.covered
    return len(new) >= n and (not n or new[n - 1] is old[n - 1]) and all(map(operator.is_, old[:n], new))


@without_gc
def build_index(session: Session, store: MessageAnchors | None = None, previous: AnchorIndex | None = None, grows: bool = True,
                said: Sequence[Said] | None = None) -> AnchorIndex:
    """Read every message once (or take what it says from `store`, where an earlier index of any
    session read it: see engine/anchor_cache.py). Anchors are then folded (one fact, one anchor),
    every message that names one in any form is added to it, and they are ordered by the message
    that first said them.

    With `previous`, the index of a session this one grew from by appended messages (a followed
    log: the same message objects, then new ones), only the new messages are read, and the old ones
    are searched only for the words the new ones made anchors of: the result is the same as
    reading the session from scratch.

    `grows=False` keeps nothing to grow from (`_growth` is None: an index of a session grown from
    this one reads it whole): for an index whose session never grows, such as the one a forked
    child builds and sends (engine/anchors_ahead.py), the copies kept for growth are never read.

    `said`, with `grows=False` and no `previous`: what every message says, read by the caller
    (`said_in` of each of `said_keys(session, 0, len(messages))`, in order). The store is then
    neither read nor filled, and each text's tokens are matched against this index's words alone:
    the same index, without keeping per text what a process about to exit never asks again (the
    forked child: its store's bookkeeping was about a tenth of its work after extraction)."""
    if said is not None and (grows or previous is not None or len(said) != len(session.messages)):
        raise ValueError("build_index: `said` needs grows=False, no previous index, and one entry per message")
    store = store if store is not None else MESSAGE_STORE
    swe = session.format in SWE_AGENT_FORMATS
    messages = session.messages
    growth: _Growth | None = None
    if previous is not None and _grows(previous, session):
        with previous._lock:
            growth, previous._growth = previous._growth, None  # used up: extended in place below
    kept = growth if growth is not None else _Growth()
    n = kept.covered  # read before
    # A message's text joins its parts (30 ms for 14,000 messages): those read before are kept.
    texts = kept.texts[:n] + [m.text for m in messages[n:]]
    covered = max(n, len(messages) - TAIL)  # read into the state kept for the next growth
    if growth is not None:
        before = kept.voices[:n]
        voices = before + _voices(messages[n:], swe, "user" in before or "observation" in before)
    else:
        voices = voices_of(session)
    head = said[n:covered] if said is not None else _said(messages, texts, voices, swe, store, n, covered)
    kept.opening_done = _read(messages[n:covered], head, kept.first, kept.opening_done)
    # What the last messages say is read into a copy (a loader may still change them).
    first = {k: [*e[:6], list(e[6]), *e[7:]] for k, e in kept.first.items()} if grows else kept.first
    tail = said[covered:] if said is not None else _said(messages, texts, voices, swe, store, covered, len(messages))
    _read(messages[covered:], tail, first, kept.opening_done)
    kept.messages, kept.voices, kept.texts = messages, voices[:covered], texts[:covered]
    aliases = _merge_paths(first)
    for old, new in aliases.items():
        a, b = first.pop(old), first[new]
        b[6] = [*a[6], *b[6]]
        if a[3] < b[3]:
            b[3:6], b[8] = a[3:6], a[8]
        if a[9] >= 0 and (b[9] < 0 or a[9] < b[9]):
            b[9] = a[9]
    # The single-token forms of every anchor, then every message that names one in any form.
    forms: dict[str, list[Any]] = {}
    for (kind, key), entry in first.items():
        if kind in TOKEN_KINDS and " " not in key:
            forms[key] = entry
            if kind == "path":
                forms[_path_forms(entry[2])] = entry
    for (_, key), new in aliases.items():
        forms[key] = first[new]
        forms[_path_forms(key)] = first[new]
    tails: dict[str, list[Any]] = {}
    for (kind, _), entry in first.items():
        if kind == "path":
            parts = _path_forms(entry[2]).lstrip("/").split("/")
            for i in range(1, len(parts)):
                if "." in parts[-1]:
                    tail = "/".join(parts[i:])
                    tails[tail] = entry if tails.get(tail, entry) is entry else []  # a tail two files share names neither
    forms.update({tail: entry for tail, entry in tails.items() if entry and tail not in forms})
    forms.update({f + end: entry for f, entry in list(forms.items()) for end in (".", "-")})  # "see src/a.py."
    for entry in first.values():
        entry[6] = set(entry[6])
    entries = list(first.values())
    position = {id(e): i for i, e in enumerate(entries)}
    form_ids = {f: position[id(e)] for f, e in forms.items()}
    phrases = _phrases((i, e[0], e[2]) for i, e in enumerate(entries))
    form_words, phrase_words = set(form_ids), set(phrases)
    if form_words or phrase_words:
        said_at = [(p, m.index) for p, (m, text) in enumerate(zip(session.messages, texts, strict=True)) if text]
        wanted = form_words | phrase_words
        if growth is not None:
            every = _grown_hits(kept, texts, n, covered, wanted)
        else:
            if said is None:
                found = store.token_hits([texts[p] for p, _ in said_at], wanted, _token_list)
                # The store's words of other sessions (the app's) were not searched for here: kept out.
                only_wanted = len(store.vocabulary.words) == len(wanted)
            else:  # what the store would give, restricted to `wanted` (see `said`)
                hits = wanted.intersection
                found = [hits(_token_list(texts[p].lower())) for p, _ in said_at]
                only_wanted = True
            every = [None] * len(texts)
            for (p, _), words in zip(said_at, found, strict=True):
                every[p] = words
            holders: defaultdict[str, list[int]] = defaultdict(list)
            for p in range(covered):
                words = every[p]
                if words:
                    for w in words if only_wanted else words & wanted:
                        holders[w].append(p)
            if grows:
                kept.hits, kept.searched, kept.holders = every[:covered], set(wanted), dict(holders)
            else:
                kept.holders = holders
        index_of = [m.index for m in messages]
        as_placed = all(map(operator.eq, index_of, range(len(index_of))))  # message i at position i, as loaders make them
        # messages[:covered] through each word's holders (a grown index reads no old message here)
        holders_of = kept.holders
        for w in form_words & holders_of.keys():
            entries[form_ids[w]][6].update(holders_of[w] if as_placed else map(index_of.__getitem__, holders_of[w]))
        within = _phrases_in(kept, texts, n, covered, phrases) if growth is not None else None
        lowered_texts: dict[int, str] = {}
        for t in phrase_words & holders_of.keys():
            for p in holders_of[t]:
                for k, phrase in phrases[t]:
                    if within is not None:
                        if p in within[phrase]:
                            entries[k][6].add(index_of[p])
                        continue
                    lowered = lowered_texts.get(p)
                    if lowered is None:
                        lowered = lowered_texts[p] = texts[p].lower()
                    if phrase in lowered:
                        entries[k][6].add(index_of[p])
        # the last messages, read again by every index (a loader may still change them)
        for p in range(covered, len(texts)):
            words = every[p]
            if not words:
                continue
            i = index_of[p]
            for w in words & form_words:
                entries[form_ids[w]][6].add(i)
            triggers = words & phrase_words
            if triggers:
                lowered = texts[p].lower()
                for t in triggers:
                    for k, phrase in phrases[t]:
                        if phrase in lowered:
                            entries[k][6].add(i)
    firsts = [min(e[6]) for e in entries]
    order = sorted(range(len(entries)), key=lambda i: (firsts[i], entries[i][3]))
    new_id = {old: new for new, old in enumerate(order)}
    messages_of = session.messages
    anchors = []
    by_message_sets: list[list[int]] = [[] for _ in messages_of]
    for i, old in enumerate(order):
        kind, key, value, index, mid, role, named_in, opening, voice, user_named = entries[old]
        lo = firsts[old]
        if index != lo:  # first named in another form or unquoted before it was extracted
            mid, role, voice = messages_of[lo].id, messages_of[lo].role, voices[lo]
        named = tuple(sorted(named_in))
        anchors.append(make_anchor(i, kind, key, value, lo, mid, role, named, opening, voice, user_named))
        for k in named:  # ids in order: each message's list is sorted
            by_message_sets[k].append(i)
    ids = {(a.kind, a.key): a.id for a in anchors}
    alias_ids = {old: ids[new] for old, new in aliases.items()}
    token_forms = {f: new_id[k] for f, k in form_ids.items()}
    final_phrases = {t: [(new_id[k], v) for k, v in found] for t, found in phrases.items()}
    by_message = tuple(map(tuple, by_message_sets))
    index = AnchorIndex(session, tuple(anchors), by_message, token_forms, alias_ids, voices, final_phrases)
    if not (form_words or phrase_words) and grows:
        _grown_hits(kept, texts, n, covered, set())
    kept.covered = covered
    index._growth = kept if grows else None
    return index



class AnchorStore:
    """Each session's anchors, extracted once. Keyed by the session's identity (hashing a session of
    100,000 messages would cost as much as reading it); the entry keeps the session alive so the
    identity cannot be reused."""

    def __init__(self, limit: int = 16) -> None:
        self._entries: dict[int, AnchorIndex] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, session: Session) -> AnchorIndex:
        with self._lock:
            found = self._entries.get(id(session))
            if found is None or found.session is not session:
                # The newest index of a session this one grew from (a followed log): only the new messages are read.
                previous = next((e for e in reversed(self._entries.values()) if _grows(e, session)), None)
        if found is not None and found.session is session:
            return found
        index = build_index(session, previous=previous)
        with self._lock:
            if len(self._entries) >= self.limit:
                self._entries.pop(next(iter(self._entries)))
            self._entries[id(session)] = index
        return index

    def forget(self, session: Session) -> None:
        with self._lock:
            self._entries.pop(id(session), None)


STORE = AnchorStore()


def anchors_of(session: Session, store: AnchorStore | None = None) -> AnchorIndex:
    """The session's anchors, from the shared store unless another is given."""
    return (store or STORE).get(session)
