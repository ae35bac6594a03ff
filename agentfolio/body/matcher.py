"""The compiled form of a schema, tuned for validating many parts.

Per part we do one dict lookup and at most one regex call:

* the raw ``content_type`` string maps (cached) to a bitmask of the schema parts
  whose content-type glob accepts it, plus one combined regex made of the name globs
  of exactly those schema parts (built once per distinct mask);
* an unnamed part is then valid iff the mask has an unnamed schema part; a named
  part iff the combined regex fully matches its name;
* required schema parts are tracked as a bitmask of those still unmet, and a part
  is tested against them individually only while some of them are pending, so the
  cost disappears once they are all met (usually within the first few parts).

A cache keyed by ``(name, content_type)`` would not help: names are unique within
a body, so within one body it would never hit.

Every call is linear in the name: the combined matcher runs the globs that could make
Python's ``re`` backtrack on RE2 instead (:mod:`agentfolio.body.linear`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .linear import Fullmatch, union_fullmatch
from .names import content_type_essence

if TYPE_CHECKING:
    from .globs import Glob
    from .parts import MessagePart
    from .schema import SchemaPart

_CT_CACHE_LIMIT = 4096


class Engine:
    def __init__(self, parts: Sequence[SchemaPart]) -> None:
        self.parts = tuple(parts)
        self.name_res: list[Glob | None] = []
        self.ct_res: list[Glob | None] = []
        unnamed = required = 0
        for i, sp in enumerate(self.parts):
            ng, cg = sp.name_glob, sp.content_type_glob
            self.name_res.append(ng)
            self.ct_res.append(cg)
            if ng is None:
                unnamed |= 1 << i
            if sp.required:
                required |= 1 << i
        self.unnamed_mask = unnamed
        self.named_mask = ((1 << len(self.parts)) - 1) & ~unnamed
        self.required_mask = required
        self._ct_cache: dict[str, tuple[int, Fullmatch]] = {}
        self._combined: dict[int, Fullmatch] = {}

    @staticmethod
    def bits(mask: int) -> Iterator[int]:
        while mask:
            low = mask & -mask
            yield low.bit_length() - 1
            mask ^= low

    def _ct_mask(self, essence: str) -> int:
        mask = 0
        for i, rx in enumerate(self.ct_res):
            if rx is None or rx.fullmatch(essence):
                mask |= 1 << i
        return mask

    def _names_matcher(self, named: int) -> Fullmatch:
        fm = self._combined.get(named)
        if fm is None:
            globs = [glob for glob in (self.name_res[i] for i in self.bits(named)) if glob is not None]
            safe = dict.fromkeys(glob.regex for glob in globs if glob.backtracking_safe)
            unsafe = dict.fromkeys(glob.regex for glob in globs if not glob.backtracking_safe)
            fm = union_fullmatch(list(safe), list(unsafe))
            self._combined[named] = fm
        return fm

    def ct_entry(self, content_type: str) -> tuple[int, Fullmatch]:
        """(mask of schema parts accepting this content type, matcher for names)."""
        entry = self._ct_cache.get(content_type)
        if entry is None:
            mask = self._ct_mask(content_type_essence(content_type))
            entry = (mask, self._names_matcher(mask & self.named_mask))
            if len(self._ct_cache) >= _CT_CACHE_LIMIT:
                # Bounded so a stream of distinct parameter spellings cannot grow it forever.
                self._ct_cache.clear()
            self._ct_cache[content_type] = entry
        return entry

    def accepts(self, name: str | None, content_type: str) -> bool:
        mask, fm = self.ct_entry(content_type)
        if name is None:
            return bool(mask & self.unnamed_mask)
        return bool(fm(name))

    def satisfy(self, name: str | None, content_type: str, pending: int) -> int:
        """``pending`` minus the required schema parts this (accepted) part matches."""
        mask, _ = self.ct_entry(content_type)
        if name is None:
            return pending & ~(mask & self.unnamed_mask)
        for i in self.bits(pending & mask & self.named_mask):
            if self.name_res[i].fullmatch(name):  # type: ignore[union-attr]
                pending &= ~(1 << i)
        return pending

    def scan(self, parts: Sequence[MessagePart]) -> tuple[list[int], int]:
        """(indexes of parts matching no schema part, mask of unmet required parts)."""
        cache = self._ct_cache
        entry_for = self.ct_entry
        unnamed = self.unnamed_mask
        named = self.named_mask
        pending = self.required_mask
        bad: list[int] = []
        append = bad.append
        for idx, part in enumerate(parts):
            name = part.name
            ct = part.content_type
            entry = cache.get(ct)
            if entry is None:
                entry = entry_for(ct)
            mask = entry[0]
            if name is None:
                if not mask & unnamed:
                    append(idx)
                elif pending & mask & unnamed:
                    pending &= ~(mask & unnamed)
            elif not entry[1](name):
                append(idx)
            elif pending & mask & named:
                pending = self.satisfy(name, ct, pending)
        return bad, pending

    def matching(self, name: str | None, content_type: str) -> list[int]:
        essence = content_type_essence(content_type)
        out = []
        for i in range(len(self.parts)):
            nrx, crx = self.name_res[i], self.ct_res[i]
            name_ok = name is None if nrx is None else name is not None and bool(nrx.fullmatch(name))
            if name_ok and (crx is None or crx.fullmatch(essence)):
                out.append(i)
        return out

    def explain(self, name: str | None, content_type: str) -> str:
        """Why a part matches no schema part, naming the near misses."""
        essence = content_type_essence(content_type)
        if not self.parts:
            return "the schema allows no parts"
        name_hits = []
        for i, nrx in enumerate(self.name_res):
            if (nrx is None and name is None) or (nrx is not None and name is not None and nrx.fullmatch(name)):
                name_hits.append(i)
        if not name_hits:
            if name is None:
                return "matches no schema part: the schema has no part for unnamed content"
            return f"matches no schema part: no name glob matches {name!r}"
        wanted = ", ".join(f"#{i} {self.parts[i].content_type!r}" for i in name_hits)
        return (
            f"matches no schema part: content type {essence!r} is not accepted by "
            f"the schema parts whose name fits ({wanted})"
        )
