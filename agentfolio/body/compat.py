"""Exact compatibility between an output schema and an input schema.

``is_compatible(O, I)`` answers: is every body valid under O also valid under I?
It decides this with automata, never by sampling, and when the answer is no it
returns a concrete body that O accepts and I rejects. docs/body.md has the proof
sketch; in short:

A *key* is a part's (name or "unnamed", content-type essence); validity depends only
on the set of keys in a body. Split the names and the content types into the atoms
of the Venn diagram of every glob in O and I (automata product/complement). Every
schema part is then a union of *cells* (name atom x content-type atom), so only
finitely many cases remain. A body valid under O is a choice of keys covering O's
required parts with unique names: a small constraint problem over cells, where a
finite name atom can host only as many distinct keys as it has names.

O ⊆ I fails exactly when

(a) some cell that no input schema part accepts can occur in a valid O body
    (solve O's required parts plus that cell), or
(b) for some required input part Q, O's required parts can be covered by cells
    outside Q (then the minimal such body misses Q).

If O's required parts cannot be covered at all, no body is valid under O and the
answer is trivially yes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from interegular.fsm import FSM

from . import automata as fa
from .body import MessageBody
from .errors import TooComplexError
from .names import CONTENT_TYPE_REGEX, NAME_REGEX
from .parts import MessagePart
from .schema import MessageBodySchema

#: Search steps allowed for the (NP-hard in general, tiny in practice) slot assignment.
MAX_SOLVER_STEPS = 200_000

_NICE_CONTENT_TYPES = (
    "text/plain", "text/markdown", "application/json", "image/png", "text/html",
    "application/octet-stream", "image/jpeg", "application/pdf", "audio/mpeg", "video/mp4",
)
_INF = None


@dataclass(frozen=True)
class Universe:
    """Regexes for the names and content types a part may have. The defaults are the
    real rules; tests pass small finite universes to compare against brute force."""

    names: str = NAME_REGEX
    content_types: str = CONTENT_TYPE_REGEX


@dataclass(frozen=True)
class Incompatibility:
    kind: Literal["unaccepted_part", "missing_required"]
    reason: str
    counterexample: MessageBody
    output_part: int | None = None
    input_part: int | None = None

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class CompatResult:
    compatible: bool
    reason: str
    problems: tuple[Incompatibility, ...] = ()
    output_satisfiable: bool = True

    def __bool__(self) -> bool:
        return self.compatible

    @property
    def counterexample(self) -> MessageBody | None:
        return self.problems[0].counterexample if self.problems else None

    def __str__(self) -> str:
        if self.compatible:
            return f"compatible: {self.reason}"
        lines = [f"not compatible: {self.reason}"]
        for p in self.problems:
            lines.append(f"  - {p.reason}")
            lines.append("    counter-example: " + p.counterexample.to_json().decode())
        return "\n".join(lines)


@dataclass
class _Atom:
    fsm: FSM | None  # None: the "unnamed" symbol
    out_mask: int
    in_mask: int
    capacity: int | None = None  # distinct names available; None = unbounded
    _examples: list[str] = field(default_factory=list)
    _iter: Any = None

    def example(self, i: int, prefer: tuple[str, ...] = ()) -> str:
        if self._iter is None:
            self._iter = fa.examples(self.fsm, prefer)  # type: ignore[arg-type]
        while len(self._examples) <= i:
            self._examples.append(next(self._iter))
        return self._examples[i]


Cell = tuple[int, int]  # (name atom index, content-type atom index)


class _Problem:
    def __init__(self, out: MessageBodySchema, inp: MessageBodySchema, universe: Universe) -> None:
        self.out, self.inp = out, inp
        n_univ = fa.intersect(fa.fsm(NAME_REGEX), fa.fsm(universe.names))
        c_univ = fa.intersect(fa.fsm(CONTENT_TYPE_REGEX), fa.fsm(universe.content_types))

        def name_langs(schema: MessageBodySchema) -> list[tuple[int, FSM]]:
            return [(i, fa.fsm(p.name_glob.regex)) for i, p in enumerate(schema.parts) if p.name_glob]

        def ct_langs(schema: MessageBodySchema) -> list[tuple[int, FSM | None]]:
            return [(i, fa.fsm(p.content_type_glob.regex) if p.content_type_glob else None)
                    for i, p in enumerate(schema.parts)]

        # Only names/content types some output part can have matter: start from those.
        out_names = name_langs(out)
        self.atoms_n: list[_Atom] = []
        if out_names:
            u = fa.intersect(n_univ, fa.union(f for _, f in out_names))
            for f, tags in fa.atoms(u, self._tagged(out_names, name_langs(inp))):
                self.atoms_n.append(_Atom(f, tags & self._mask(out), tags >> len(out.parts)))
        unnamed_out = out.engine.unnamed_mask
        if unnamed_out:
            self.atoms_n.append(_Atom(None, unnamed_out, inp.engine.unnamed_mask))

        out_cts = ct_langs(out)
        any_ct_out = [i for i, f in out_cts if f is None]
        any_ct_in = [i for i, f in ct_langs(inp) if f is None]
        u = c_univ if any_ct_out else fa.intersect(c_univ, fa.union(f for _, f in out_cts if f is not None))
        typed = self._tagged([(i, f) for i, f in out_cts if f is not None], [(i, f) for i, f in ct_langs(inp) if f is not None])
        always = sum(1 << i for i in any_ct_out) | sum(1 << (i + len(out.parts)) for i in any_ct_in)
        self.atoms_c = [
            _Atom(f, (tags | always) & self._mask(out), (tags | always) >> len(out.parts))
            for f, tags in fa.atoms(u, typed)
        ]
        self.cells: dict[Cell, tuple[int, int]] = {}
        for a, na in enumerate(self.atoms_n):
            for c, ca in enumerate(self.atoms_c):
                o = na.out_mask & ca.out_mask
                if o:
                    self.cells[(a, c)] = (o, na.in_mask & ca.in_mask)
        needed = bin(out.engine.required_mask).count("1") + 2
        for atom in self.atoms_n:
            if atom.fsm is not None:
                atom.capacity = fa.cardinality(atom.fsm, needed)

    def _mask(self, schema: MessageBodySchema) -> int:
        return (1 << len(schema.parts)) - 1

    def _tagged(self, outs: list[tuple[int, FSM]], ins: list[tuple[int, FSM]]) -> list[tuple[FSM, int]]:
        # Output parts take tag bits 0..n-1, input parts n.. ; identical regexes split once.
        shift = len(self.out.parts)
        merged: dict[int, tuple[FSM, int]] = {}
        for i, f in outs:
            f0, t = merged.get(id(f), (f, 0))
            merged[id(f)] = (f0, t | 1 << i)
        for i, f in ins:
            f0, t = merged.get(id(f), (f, 0))
            merged[id(f)] = (f0, t | 1 << (i + shift))
        return list(merged.values())

    # -- the slot-assignment search ---------------------------------------------

    def solve(self, requirements: list[list[Cell]]) -> list[Cell] | None:
        """Distinct cells covering every requirement (one cell each, shared freely),
        with at most ``capacity`` distinct content-type atoms per finite name atom.
        Returns None if impossible."""
        chosen: list[Cell] = []
        used: dict[int, set[int]] = defaultdict(set)
        easy: list[list[Cell]] = []
        hard: list[list[Cell]] = []
        for req in requirements:
            if not req:
                return None
            (easy if any(self.atoms_n[a].capacity is _INF for a, _ in req) else hard).append(req)
        hard.sort(key=len)
        steps = 0

        def place(i: int) -> bool:
            nonlocal steps
            steps += 1
            if steps > MAX_SOLVER_STEPS:
                raise TooComplexError("compatibility check too complex: too many finite name sets to juggle")
            if i == len(hard):
                return True
            req = hard[i]
            for a, c in req:
                if c in used[a]:
                    # Reusing a chosen key costs nothing, so no other choice can do better.
                    return place(i + 1)
            for a, c in req:
                if len(used[a]) < self.atoms_n[a].capacity:  # type: ignore[operator]
                    used[a].add(c)
                    chosen.append((a, c))
                    if place(i + 1):
                        return True
                    chosen.pop()
                    used[a].discard(c)
            return False

        if not place(0):
            return None
        # Singletons first, then reuse where possible: the witness stays minimal.
        for req in sorted(easy, key=len):
            reuse = [cell for cell in req if cell in chosen]
            cell = reuse[0] if reuse else next(x for x in req if self.atoms_n[x[0]].capacity is _INF)
            if cell not in chosen:
                chosen.append(cell)
        return chosen

    def body_of(self, cells: list[Cell]) -> MessageBody:
        parts = []
        per_atom: dict[int, int] = defaultdict(int)
        for a, c in dict.fromkeys(cells):
            atom = self.atoms_n[a]
            name = None
            if atom.fsm is not None:
                name = atom.example(per_atom[a])
                per_atom[a] += 1
            ct = self.atoms_c[c].example(0, _NICE_CONTENT_TYPES)
            parts.append(_sample_part(name, ct))
        return MessageBody.of(parts)



def _sample_part(name: str | None, content_type: str) -> MessagePart:
    if content_type.startswith("text/"):
        return MessagePart(name=name, content_type=content_type, content="example")
    if content_type == "application/json" or content_type.endswith("+json"):
        return MessagePart(name=name, content_type=content_type, content="{}")
    return MessagePart(name=name, content_type=content_type, content="", content_encoding="base64")


def is_compatible(
    output_schema: MessageBodySchema | Mapping[str, Any],
    input_schema: MessageBodySchema | Mapping[str, Any],
    *,
    universe: Universe | None = None,
) -> CompatResult:
    """Decide exactly whether every body valid under ``output_schema`` is valid under
    ``input_schema``. Falsy result when not, with ``.counterexample`` (a body the
    output schema accepts and the input schema rejects) and ``.reason``."""
    out = MessageBodySchema.parse(output_schema)
    inp = MessageBodySchema.parse(input_schema)
    pb = _Problem(out, inp, universe or Universe())
    required_out = list(out.engine.bits(out.engine.required_mask))
    reqs = [[cell for cell, (o, _) in pb.cells.items() if o >> r & 1] for r in required_out]

    if pb.solve(reqs) is None:
        empty = [r for r, req in zip(required_out, reqs) if not req]
        why = (
            f"required output schema part #{empty[0]} ({out.parts[empty[0]].describe()}) "
            "can match no valid part"
            if empty else
            "its required parts cannot all be matched by parts with unique names"
        )
        return CompatResult(
            True,
            f"no body is valid under the output schema ({why}), so there is nothing to reject",
            output_satisfiable=False,
        )

    problems: list[Incompatibility] = []
    reported_out: set[int] = set()
    for cell, (o, i) in pb.cells.items():
        if i:
            continue
        first_out = next(out.engine.bits(o))
        if first_out in reported_out:
            continue
        chosen = pb.solve(reqs + [[cell]])
        if chosen is None:
            continue
        reported_out.add(first_out)
        body = pb.body_of(chosen)
        offender = next(p for p in body.parts if not inp.matching(p))
        who = "an unnamed part" if offender.name is None else f"a part named {offender.name!r}"
        problems.append(Incompatibility(
            "unaccepted_part",
            f"output schema part #{first_out} ({out.parts[first_out].describe()}) allows "
            f"{who} with content type {offender.content_type!r}, which no input schema part accepts",
            body,
            output_part=first_out,
        ))

    for q in inp.engine.bits(inp.engine.required_mask):
        avoiding = [[cell for cell in req if not pb.cells[cell][1] >> q & 1] for req in reqs]
        chosen = pb.solve(avoiding)
        if chosen is None:
            continue
        why = ("the output schema requires nothing, so an empty body is valid output"
               if not reqs else
               "a body can meet every required output part without matching it")
        problems.append(Incompatibility(
            "missing_required",
            f"input schema part #{q} ({inp.parts[q].describe()}) may be unmatched: {why}",
            pb.body_of(chosen),
            input_part=q,
        ))

    for p in problems:
        _verify(out, inp, p.counterexample)
    if problems:
        return CompatResult(False, problems[0].reason, tuple(problems))
    return CompatResult(True, "every body valid under the output schema is valid under the input schema")


def _verify(out: MessageBodySchema, inp: MessageBodySchema, body: MessageBody) -> None:
    # A wrong counter-example would be worse than none; fail loudly if the search erred.
    if not out.validate_body(body).ok or inp.validate_body(body).ok:
        raise AssertionError(f"internal error: counter-example {body.to_json()!r} is not one")


#: Seconds a compatibility check may take before it is stopped (:func:`check_compatibility`).
DEFAULT_COMPAT_TIMEOUT = 10.0


def _decide(output_schema: dict[str, Any], input_schema: dict[str, Any]) -> CompatResult:
    return is_compatible(output_schema, input_schema)


def check_compatibility(
    output_schema: MessageBodySchema | Mapping[str, Any],
    input_schema: MessageBodySchema | Mapping[str, Any],
    *,
    timeout: float = DEFAULT_COMPAT_TIMEOUT,
) -> CompatResult:
    """:func:`is_compatible` under a deadline that really stops it: the check runs in a
    child process killed after ``timeout`` seconds (or when it needs more than its memory),
    and then :class:`agentfolio._deadline.DeadlineExceededError` (code ``too_complex``) says so.
    The schemas are parsed here first, so a malformed or oversized one is refused at once."""
    from agentfolio._deadline import run_with_deadline

    out = MessageBodySchema.parse(output_schema).to_dict()
    inp = MessageBodySchema.parse(input_schema).to_dict()
    return run_with_deadline(_decide, out, inp, timeout=timeout, what="the compatibility check")
