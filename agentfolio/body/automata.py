"""Finite automata over names and content types (thin helpers over interegular).

interegular gives us regex -> DFA, product (``&``), complement and emptiness. We
add what compatibility checking needs on top: the Boolean atoms of a family of
languages, capped cardinality, and readable example strings.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from functools import lru_cache

import interegular
from interegular.fsm import FSM, State, TransitionKey, anything_else

from .errors import TooComplexError

#: Above this many atoms we give up with an error rather than run for minutes.
MAX_ATOMS = 2048
#: States in any one automaton (a glob's, or a product of two): beyond this the
#: products and complements that follow would cost too much.
MAX_STATES = 20_000

_PREFERRED = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_-.+!#$&^/"
_RANK = {c: i for i, c in enumerate(_PREFERRED)}


def _bounded(f: FSM) -> FSM:
    if len(f.states) > MAX_STATES:
        raise TooComplexError(f"compatibility check too complex: an automaton of the schemas' globs has "
                         f"{len(f.states):,} states (limit {MAX_STATES:,}); simplify the globs")
    return f


@lru_cache(maxsize=2048)
def fsm(regex: str) -> FSM:
    """The minimal DFA of ``regex`` (full-match semantics)."""
    return _bounded(interegular.parse_pattern(regex).to_fsm().reduce())


def intersect(a: FSM, b: FSM) -> FSM:
    return _bounded((a & b).reduce())


def minus(a: FSM, b: FSM) -> FSM:
    return _bounded((a & b.everythingbut()).reduce())


def union(fsms: Iterable[FSM]) -> FSM:
    fsms = list(fsms)
    if not fsms:
        return fsm("[]")  # interegular: an empty character class matches nothing
    return FSM.union(*fsms).reduce() if len(fsms) > 1 else fsms[0]


def is_empty(f: FSM) -> bool:
    return bool(f.empty())


def _live(f: FSM) -> set[State]:
    """States from which a final state is reachable (one backward sweep)."""
    back: dict[State, set[State]] = {}
    for s, trans in f.map.items():
        for t in trans.values():
            back.setdefault(t, set()).add(s)
    live = set(f.finals)
    todo = list(live)
    while todo:
        for p in back.get(todo.pop(), ()):
            if p not in live:
                live.add(p)
                todo.append(p)
    return live


def _chars(f: FSM, key: TransitionKey) -> list[str]:
    return [c for c in f.alphabet.by_transition.get(key, ()) if c is not anything_else]


def cardinality(f: FSM, cap: int) -> int | None:
    """How many strings ``f`` accepts, or None if infinite or at least ``cap``
    (callers only ever need to know whether there are enough distinct names)."""
    live = _live(f)
    if f.initial not in live:
        return 0
    memo: dict[State, int] = {}
    on_path: set[State] = set()

    def count(s: State) -> int:
        if s in memo:
            return memo[s]
        if s in on_path:
            raise OverflowError
        on_path.add(s)
        n = 1 if s in f.finals else 0
        for key, t in f.map.get(s, {}).items():
            if t in live:
                width = len(_chars(f, key))
                if width:
                    n += width * count(t)
                    if n >= cap:
                        break
        on_path.discard(s)
        memo[s] = min(n, cap)
        return memo[s]

    try:
        n = count(f.initial)
    except OverflowError:
        return None
    return None if n >= cap else n


def examples(f: FSM, prefer: Iterable[str] = ()) -> Iterator[str]:
    """Accepted strings: first any of ``prefer`` that ``f`` accepts, then the rest
    shortest first, favouring lower-case letters and digits so that witnesses read
    like ``/a`` rather than ``/-``. Never repeats a string."""
    seen: set[str] = set()
    for word in prefer:
        if word not in seen and f.accepts(word):
            seen.add(word)
            yield word
    live = _live(f)
    if f.initial not in live:
        return
    # Exact distance-to-accept makes this A* search pop strings in length order.
    dist: dict[State, int] = {s: 0 for s in f.finals if s in live}
    frontier = list(dist)
    back: dict[State, set[State]] = {}
    for src, trans in f.map.items():
        for t in trans.values():
            back.setdefault(t, set()).add(src)
    while frontier:
        nxt = []
        for s in frontier:
            for p in back.get(s, ()):
                if p in live and p not in dist:
                    dist[p] = dist[s] + 1
                    nxt.append(p)
        frontier = nxt
    heap: list[tuple[int, tuple[int, ...], str, State]] = [(dist[f.initial], (), "", f.initial)]
    while heap:
        _, ranks, text, state = heapq.heappop(heap)
        if state in f.finals and text not in seen:
            seen.add(text)
            yield text
        for key, t in sorted(f.map.get(state, {}).items()):
            if t not in dist:
                continue
            for c in _chars(f, key):
                heapq.heappush(
                    heap, (len(text) + 1 + dist[t], (*ranks, _RANK.get(c, 999)), text + c, t)
                )


def literal_prefix(f: FSM) -> str:
    """The longest string every word ``f`` accepts starts with (read off the automaton:
    follow the start while only one character leads on to an accepted word)."""
    live = _live(f)
    prefix: list[str] = []
    state, seen = f.initial, set()
    while state in live and state not in f.finals and state not in seen:
        seen.add(state)
        onward = [(key, t) for key, t in f.map.get(state, {}).items() if t in live]
        if len(onward) != 1:
            break
        key, state = onward[0]
        chars = f.alphabet.by_transition.get(key, ())
        if len(chars) != 1 or chars[0] is anything_else:
            break
        prefix.append(chars[0])
    return "".join(prefix)


def atoms(universe: FSM, languages: Iterable[tuple[FSM, int]]) -> list[tuple[FSM, int]]:
    """Split ``universe`` into the non-empty regions of the Venn diagram of the
    ``languages``; each comes with the OR of the tags of the languages containing it.
    Every language is then a union of whole atoms, which is what lets compatibility
    reason about finitely many cells instead of infinitely many strings.

    Each region carries the literal prefix all its words share: a language whose prefix
    diverges from it cannot meet it, which skips the automaton product for most pairs
    (parts named ``/a/*``, ``/b/*``, ... would otherwise cost parts x regions products)."""
    result = [(universe, 0, literal_prefix(universe))] if not is_empty(universe) else []
    for lang, tag in languages:
        lang_prefix = literal_prefix(lang)
        refined: list[tuple[FSM, int, str]] = []
        for atom, tags, prefix in result:
            if not (prefix.startswith(lang_prefix) or lang_prefix.startswith(prefix)):
                refined.append((atom, tags, prefix))
                continue
            inside = intersect(atom, lang)
            if is_empty(inside):
                refined.append((atom, tags, prefix))
                continue
            outside = minus(atom, lang)
            refined.append((inside, tags | tag, max(prefix, lang_prefix, key=len)))
            if not is_empty(outside):
                refined.append((outside, tags, prefix))
        result = refined
        if len(result) > MAX_ATOMS:
            raise TooComplexError(
                "compatibility check too complex: the schemas' globs split the space of names/content types "
                f"into more than "
                f"{MAX_ATOMS} regions; simplify them to check compatibility"
            )
    return [(atom, tags) for atom, tags, _ in result]
