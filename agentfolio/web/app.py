"""The viewer's pages, as a FastAPI router mounted at ``/`` by ``agentfolio serve``.

``create_web_router(folio=..., account=...)`` (``folio``: an :class:`agentfolio.app.Agentfolio`):

* ``folio=None``: a file viewer only (open a file, traces, agents, compatibility).
* ``folio`` and ``account``: every page shows that account's sessions, no sign-in
  (``agentfolio serve --demo``, a personal store on 127.0.0.1).
* ``folio`` alone: pages ask for a token (``agentfolio token create``) once and keep it
  in an HttpOnly, SameSite=Strict cookie; each account sees only its own sessions.

Pages are server-rendered Jinja2 (``agentfolio/web/templates``) with small vendored
static files (htmx and ``viewer.js``) served from the package: nothing is fetched from
the network.  Every page is sent with a Content-Security-Policy that runs scripts only
from this origin (no inline scripts, no ``eval``), so a script that a record carries
cannot run even if it slipped past escaping.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from importlib import resources
from typing import Any, cast
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from agentfolio._cache import Lru
from agentfolio.app.accounts import VIEWER_SESSION_SECONDS
from agentfolio.app.documents import schema_version_of
from agentfolio.app.sessions import SESSION_SORTS
from agentfolio.errors import AgentfolioError
from agentfolio.formats import durable_state
from agentfolio.formats.errors import FormatError, Problem
from agentfolio.formats.jsonio import gc_paused
from agentfolio.present import activity, compare
from agentfolio.present.search import SessionIndex
from agentfolio.web import agents as agent_views
from agentfolio.web import html, registry_data
from agentfolio.web import traces as trace_pages
from agentfolio.web.charts import usage_charts
from agentfolio.web.csrf import refuse_cross_site
from agentfolio.web.documents import Opened, OpenedFiles, OpenedStore, StoredOpenedFiles
from agentfolio.web.traces import trace_from_document

COOKIE = "agentfolio_session"
# Images and media only from this origin or the record itself (data:): a record cannot make
# the viewer's browser fetch from its author's server (a read receipt); remote media are
# shown as a link that opens in a new tab on a click.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "media-src 'self' data: blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".svg": "image/svg+xml"}
# What a static file's name may hold: no separators, NUL or other bytes a path could trip on.
STATIC_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
LIST_PAGE = 50
#: Most entries one request renders ("load all" asks for pages this big).
MAX_PAGE_ENTRIES = 1000
#: Entries read around a page of a stored session not yet read whole: calls before the
#: page whose results it shows, results after it of calls it shows.
WINDOW_BEHIND = 8
WINDOW_AHEAD = 24
#: Largest file the "open a file" page accepts.
MAX_UPLOAD_BYTES = 128 * 1024 * 1024


#: A narrowed page (``show``) draws the matching entries of at most this many in a row.
SHOW_SPAN = 400
#: Most positions one find answers with (the status then says "or more").
FIND_LIMIT = 10_000


@dataclass
class Conversation:
    """What ``partials/conversation.html`` shows: a session's header and first entries."""

    title: str
    subtitle: str | None
    view: html.SessionView
    entries: list[html.EntryView]
    problems: list[Problem]
    prefix: str
    next_url: str | None
    next_page: str | None
    remaining: int
    loaded_until: int
    export_url: str | None
    #: Outcomes of requests not in the history, shown once the last entry is.
    tail: list[html.OutcomeView] = field(default_factory=list)
    #: Where totals, tools and validation come from when ``view`` is a window.
    summary_url: str | None = None
    #: The session's page (links to an entry are made from it) and the first entry a link
    #: must name as ``start`` (those before it are on the page's first screen).
    page_url: str | None = None
    linked_from: int = 0
    #: The entries before this page's first, when it starts mid-session: how many, and
    #: where the ones just before come from (fragment and page).
    earlier: int = 0
    earlier_url: str | None = None
    earlier_page: str | None = None
    #: What the page is narrowed to (``present.activity.SHOW_CHOICES``), or None.
    show: str | None = None
    #: Where a find over the whole session asks for matching positions (stored sessions
    #: and opened files; not the export, which finds in its page).
    find_url: str | None = None


@dataclass
class Source:
    """A session to show, stored or opened: where its pages live and its prepared view."""

    title: str
    subtitle: str | None
    view: html.SessionView
    problems: list[Problem]
    url: str  # the session page; entries at url + "/entries", export at url + "/export.html"

    def conversation(self, start: int = 0, *, prefix: str = "", page: int = html.PAGE_ENTRIES,
                     stop: int | None = None, only: Sequence[int] | None = None, show: str | None = None,
                     earlier: bool = True, more: bool = True) -> Conversation:
        """The entries from ``start`` (to ``stop``, else ``page`` of them); ``only``: just
        these positions among them (a page narrowed to ``show``).  ``earlier``/``more``:
        whether to offer the entries before and after."""
        total = self.view.entry_count
        start = max(0, min(start, total))
        stop = min(total, start + page if stop is None else stop)
        next_url, next_page = self.next_links(stop, prefix, show) if more else (None, None)
        earlier_count = start if earlier and start > 0 and not show else 0
        before = max(0, start - html.PAGE_ENTRIES)
        return Conversation(self.title, self.subtitle, self.view,
                            html.entry_views(self.view, start, stop, only=only, show=show),
                            self.problems if start == 0 else [], prefix, next_url, next_page,
                            remaining=total - stop, loaded_until=stop, export_url=self.url + "/export.html",
                            tail=html.unplaced_outcomes(self.view) if stop >= total and not show else [],
                            summary_url=self.url + "/summary" if self.view.partial else None,
                            page_url=self.url, linked_from=stop if start == 0 else 0,
                            earlier=earlier_count,
                            earlier_url=self._entries_url(before, prefix, page=start - before, earlier=1, more=0)
                            if earlier_count else None,
                            earlier_page=f"{self.url}?start={before}" if earlier_count else None,
                            show=show, find_url=None if prefix else self.url + "/find")

    def next_links(self, stop: int, prefix: str, show: str | None = None) -> tuple[str | None, str | None]:
        if stop >= self.view.entry_count:
            return None, None
        page_query = urlencode({"start": stop, **({"show": show} if show else {})})
        return self._entries_url(stop, prefix, show=show), f"{self.url}?{page_query}"

    def _entries_url(self, start: int, prefix: str, **more: Any) -> str:
        query: dict[str, Any] = {"start": start}
        if prefix:
            query["prefix"] = prefix
        query.update({key: value for key, value in more.items() if value is not None})
        return f"{self.url}/entries?{urlencode(query)}"


@dataclass
class Who:
    account: Any  # agentfolio.store.Account or None
    owner: Any  # key for opened files

    @property
    def name(self) -> str | None:
        return getattr(self.account, "name", None)


@dataclass
class WebViewer:
    folio: Any = None
    account: Any = None
    prefix: str = ""
    opened: OpenedStore = field(default_factory=OpenedFiles)
    sessions: Lru[Any, Any] = field(default_factory=lambda: Lru(8))
    locks: dict[Any, threading.Lock] = field(default_factory=dict)
    locks_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def compat_timeout(self) -> float:
        """Seconds a compatibility check may run (``AGENTFOLIO_COMPAT_TIMEOUT``)."""
        settings = getattr(self.folio, "settings", None)
        if settings is None:
            from agentfolio.settings import Settings, SettingsError

            try:
                settings = Settings.from_env()
            except SettingsError:
                settings = Settings()
        return float(settings.compat_timeout)

    # -- who is asking --------------------------------------------------------------

    @property
    def needs_sign_in(self) -> bool:
        return self.folio is not None and self.account is None

    def who(self, request: Request) -> Who | None:
        """The account a request acts as; None when it must sign in first."""
        if self.folio is None:
            return Who(None, None)
        if self.account is not None:
            return Who(self.account, self.account.pk)
        # The cookie holds a sign-in's secret (ended by signing out or revoking its token);
        # scripts may send the API token itself as a bearer header instead.
        secret = request.cookies.get(COOKIE)
        account = self.folio.accounts.viewer_account(secret) if secret else None
        header = request.headers.get("authorization", "")
        if account is None and header.lower().startswith("bearer "):
            account = self.folio.accounts.authenticate(header[7:].strip())
        return Who(account, account.pk) if account is not None else None

    # -- responses ------------------------------------------------------------------

    def page(self, request: Request, template: str, who: Who | None, status: int = 200, **context: Any) -> Response:
        body = html.render(template, base=self.prefix, has_store=self.folio is not None,
                           account=who.name if who else None, can_sign_out=self.needs_sign_in,
                           request=request, **context)
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def error(self, request: Request, who: Who | None, status: int, heading: str, message: str,
              problems: list[Problem] | None = None) -> Response:
        return self.page(request, "error.html", who, status, heading=heading, message=message,
                         problems=problems or [], nav=None)

    def sign_in(self, request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.headers.get("hx-request"):
            return Response(status_code=204, headers={"HX-Redirect": f"{self.prefix}/login"})
        return RedirectResponse(f"{self.prefix}/login?{urlencode({'next': target})}", status_code=303)

    # -- sessions -------------------------------------------------------------------

    def stored_source(self, who: Who, session_id: str, start: int = 0, page: int | None = None) -> Source:
        """A stored session as a Source: the whole of it when it was read already (cached
        per version), else only the window a page of ``page`` entries from ``start`` draws,
        so the first screen of a session costs the same at any length.  ``page=None``:
        the whole session (export, totals, validation)."""
        info = self.folio.sessions.info(who.account, session_id)
        key = ("stored", who.owner, session_id, info.version)
        cached = self.sessions.get(key)
        if cached is None and page is not None:
            low = max(0, start - WINDOW_BEHIND)
            high = max(low, start) + page + WINDOW_AHEAD
            if low > 0 or high < info.entry_count:
                info, data = self.folio.sessions.read_window(who.account, session_id, low, high)
                result = durable_state.read_bytes(data, strict=False, source=session_id)
                view = html.session_view(result.session, offset=low, total=info.entry_count)
                # Validity is the whole document's: drawn once it has been read whole (``summary``).
                return self._source(session_id, info, view, [])
        if cached is None:
            with self._building(key):
                cached = self.sessions.get(key)
                if cached is None:
                    # Collector paused while the records are built (they make no cycles), not
                    # frozen after: gc.freeze() is process-wide, and every cycle that other
                    # requests held at that moment would never be collected once dropped.
                    with gc_paused():
                        info, data = self.folio.sessions.read_bytes(who.account, session_id)
                        result = durable_state.read_bytes(data, strict=False, source=session_id)
                        view = html.session_view(result.session)
                    cached = self.sessions.put(key, (view, list(result.problems), info))
        view, problems, info = cached
        return self._source(session_id, info, view, problems)

    def _source(self, session_id: str, info: Any, view: html.SessionView, problems: list[Problem]) -> Source:
        subtitle = " · ".join(part for part in (f"agent {info.agent}" if info.agent else None,
                                                f"version {info.version}") if part)
        return Source(session_id, subtitle, view, problems, f"{self.prefix}/sessions/{quote(session_id, safe='')}")

    @contextlib.contextmanager
    def _building(self, key: Any) -> Iterator[None]:
        """One thread reads a session whole; others asking for it meanwhile wait for it."""
        with self.locks_lock:
            lock = self.locks.setdefault(key, threading.Lock())
        with lock:
            yield
        with self.locks_lock:
            if self.locks.get(key) is lock and not lock.locked():
                self.locks.pop(key, None)

    def opened_source(self, opened: Opened) -> Source:
        result = opened.result
        assert result is not None, "an opened file of kind 'session' always carries its ReadResult"
        view = opened.cache.get("view")
        if view is None:
            with gc_paused():
                view = opened.cache.setdefault("view", html.session_view(result.session))
        subtitle = f"opened file · {opened.detected}" + (f" {result.version}" if result.version else "")
        return Source(opened.name, subtitle, view, opened.problems, f"{self.prefix}/open/{opened.token}")

    def source_for(self, who: Who, ref: str) -> Source | Opened | tuple[str, Any] | None:
        """``file:<token>`` (an opened file), ``instance:<id>`` (a stored trace, as
        ``(title, trace)``) or a stored session id."""
        ref = ref.strip()
        if ref.startswith("instance:") and registry_data.has_registry(self.folio):
            try:
                return f"Instance {ref[9:]}", registry_data.instance_trace(self.folio, who.account, ref[9:])
            except AgentfolioError:
                return None
        if ref.startswith("file:"):
            opened = self.opened.get(ref[5:], who)
            if opened is None:
                return None
            return self.opened_source(opened) if opened.kind == "session" else opened
        if self.folio is None or not ref:
            return None
        try:
            return self.stored_source(who, ref)
        except AgentfolioError:
            return None


def _problems_of(error: Exception) -> list[Problem]:
    if isinstance(error, FormatError):
        return list(error.problems) or [Problem(error.pointer or "", error.message)]
    return [Problem(getattr(error, "pointer", "") or "", str(error))]


def _parse_local_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def create_web_router(*, folio: Any = None, account: Any = None, prefix: str = "",
                      opened: OpenedStore | None = None) -> APIRouter:
    """The viewer's routes; include it in an app (``app.include_router(router)``)."""
    if opened is None:
        opened = StoredOpenedFiles(folio) if folio is not None else OpenedFiles()
    viewer = WebViewer(folio=folio, account=account, prefix=prefix.rstrip("/"), opened=opened)
    router = APIRouter(prefix=viewer.prefix, include_in_schema=False, dependencies=[Depends(refuse_cross_site)])
    for name in ("session.html", "entries_fragment.html", "sessions.html", "trace.html", "agents.html"):
        html.environment().get_template(name)  # compiled now, not on someone's first page
    html.render_markdown("*warm*")
    router.viewer = viewer  # type: ignore[attr-defined]  # for tests and the benchmark

    def guarded(handler: Callable[..., Any]) -> Callable[..., Any]:
        """Run a page handler as the signed-in account, or send the browser to sign in."""
        import functools

        @functools.wraps(handler)
        async def wrapper(request: Request, *args: Any, **kwargs: Any) -> Response:
            who = await run_in_threadpool(viewer.who, request)
            if who is None:
                return viewer.sign_in(request)
            try:
                response: Response = await handler(request, who, *args, **kwargs)
                return response
            except Exception as error:  # a page never answers with a traceback or a JSON 500
                if isinstance(error, AgentfolioError) and error.code == "not_found":
                    return viewer.error(request, who, 404, "Not found", error.message)
                if isinstance(error, AgentfolioError):
                    return viewer.error(request, who, 400, "Cannot show this", str(error), _problems_of(error))
                import logging

                logging.getLogger("agentfolio.web").exception("viewer page failed: %s", request.url.path)
                return viewer.error(request, who, 500, "Something went wrong",
                                    "The page could not be built; the error was logged.")

        # FastAPI reads the signature: hide the ``who`` parameter from it.
        import inspect

        signature = inspect.signature(handler)
        parameters = [p for name, p in signature.parameters.items() if name != "who"]
        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return wrapper

    # -- static files and sign-in --------------------------------------------------

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        if not STATIC_NAME.fullmatch(name) or suffix not in STATIC_TYPES:
            return Response("not found", status_code=404, media_type="text/plain")
        try:
            data = resources.files("agentfolio.web").joinpath("static", name).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(data, media_type=STATIC_TYPES[suffix],
                        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"})

    @router.get("/login")
    async def login_form(request: Request, next: str = "/") -> Response:
        return viewer.page(request, "login.html", None, next=_local(next, viewer.prefix), message=None, nav=None)

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = await request.form()
        token = str(form.get("token") or "").strip()
        target = _local(str(form.get("next") or "/"), viewer.prefix)
        if viewer.folio is None:
            return RedirectResponse(target, status_code=303)
        signed_in = await run_in_threadpool(viewer.folio.accounts.sign_in_viewer, token) if token else None
        if signed_in is None:
            return viewer.page(request, "login.html", None, 401, next=target, nav=None,
                               message="That token is not valid (unknown or revoked).")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, signed_in[0], httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path=viewer.prefix or "/",
                            max_age=VIEWER_SESSION_SECONDS)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        secret = request.cookies.get(COOKIE)
        if secret and viewer.folio is not None:  # ended here, not only forgotten by this browser
            await run_in_threadpool(viewer.folio.accounts.sign_out_viewer, secret)
        response = RedirectResponse(f"{viewer.prefix}/login", status_code=303)
        response.delete_cookie(COOKIE, path=viewer.prefix or "/")
        return response

    @router.get("/")
    @guarded
    async def home(request: Request, who: Who) -> Response:
        return RedirectResponse(f"{viewer.prefix}/sessions" if viewer.folio is not None else f"{viewer.prefix}/open",
                                status_code=303)

    # -- stored sessions ------------------------------------------------------------

    @router.get("/sessions")
    @guarded
    async def sessions_page(request: Request, who: Who, q: str = "", agent: str = "", since: str = "",
                            until: str = "", sort: str = "updated", order: str = "desc", offset: int = 0) -> Response:
        if viewer.folio is None:
            return viewer.error(request, who, 404, "No store", "This viewer has no session store; open a file instead.")
        offset = max(0, min(offset, 10_000_000))
        sort = sort if sort in SESSION_SORTS else "updated"
        descending = order != "asc"
        text = q.replace("\x00", "").strip()[:500] or None
        filters = {"agent_contains": agent.replace("\x00", "").strip()[:200] or None,
                   "since": _parse_local_time(since), "until": _parse_local_time(until), "text": text}

        def load() -> tuple[list[Any], int, dict[str, str]]:
            found = viewer.folio.sessions.list(who.account, sort=sort, descending=descending, limit=LIST_PAGE,
                                               offset=offset, **filters)
            total = viewer.folio.sessions.count(who.account, **filters)
            snippets = viewer.folio.sessions.match_snippets(who.account, [info.id for info in found], text) \
                if text else {}
            return found, total, snippets

        found, total, snippets = await run_in_threadpool(load)
        shown = {"q": q, "agent": agent, "since": since, "until": until}
        kept = {key: value for key, value in shown.items() if value}

        def page_url(to: int, by: str = sort, descending: bool = descending) -> str:
            query = {**kept, **({"sort": by} if by != "updated" else {}),
                     **({"order": "asc"} if not descending else {}), **({"offset": to} if to else {})}
            return f"{viewer.prefix}/sessions" + (f"?{urlencode(query)}" if query else "")

        def sort_url(by: str) -> str:
            # A column's first click sorts it descending (most first), the next click flips it.
            return page_url(0, by, not descending if by == sort else by not in ("agent", "id"))

        context: dict[str, Any] = {
            "sessions": found, "filters": shown, "offset": offset, "total": total, "snippets": snippets,
            "sort": sort, "descending": descending, "sort_url": sort_url,
            "next_url": page_url(offset + LIST_PAGE) if offset + LIST_PAGE < total else None,
            "prev_url": page_url(max(0, offset - LIST_PAGE)) if offset else None,
            "find": q.strip(), "nav": "sessions", "iso": _iso}
        if request.headers.get("hx-request") and request.headers.get("hx-target") == "session-list":
            return HTMLResponse(html.render("partials/session_list.html", base=viewer.prefix, **context),
                                headers=SECURITY_HEADERS)
        return viewer.page(request, "sessions.html", who, **context)

    @router.get("/sessions/{session_id}")
    @guarded
    async def session_page(request: Request, who: Who, session_id: str, start: int = 0, show: str = "") -> Response:
        if viewer.folio is None:
            return viewer.error(request, who, 404, "No store", "This viewer has no session store.")
        conv = await run_in_threadpool(_stored_conversation, who, session_id, Paging(max(0, start), show=show))
        return viewer.page(request, "session.html", who, conv=conv, nav="sessions", shows=SHOWS)

    @router.get("/sessions/{session_id}/entries")
    @guarded
    async def session_entries(request: Request, who: Who, session_id: str, start: int = 0, prefix: str = "",
                              page: int = html.PAGE_ENTRIES, show: str = "", earlier: int = 0,
                              more: int = 1) -> Response:
        paging = Paging(max(0, start), page, show, prefix, bool(earlier), bool(more))
        conv = await run_in_threadpool(_stored_conversation, who, session_id, paging)
        return await run_in_threadpool(_entries, conv)

    @router.get("/sessions/{session_id}/find")
    @guarded
    async def session_find(request: Request, who: Who, session_id: str, q: str = "", show: str = "") -> Response:
        """Where ``q`` occurs in the whole session: the positions of the entries that hold it."""
        if viewer.folio is None:
            return viewer.error(request, who, 404, "No store", "This viewer has no session store.")
        text = _find_text(q)
        found = await run_in_threadpool(viewer.folio.sessions.find_positions, who.account, session_id,
                                        text=text, show=activity.valid_show(show), limit=FIND_LIMIT + 1) \
            if text else []
        return _found(q, found)

    def _stored_conversation(who: Who, session_id: str, paging: Paging) -> Conversation:
        def window(first: int, count: int) -> Source:
            return viewer.stored_source(who, session_id, first, count)

        def find(**options: Any) -> Sequence[int]:
            return cast(Sequence[int], viewer.folio.sessions.find_positions(who.account, session_id, **options))

        return _conversation(window, find, paging)

    @router.get("/sessions/{session_id}/summary")
    @guarded
    async def session_summary(request: Request, who: Who, session_id: str) -> Response:
        """What needs the whole history (token totals, tools, validation), drawn after the first screen."""
        source = await run_in_threadpool(viewer.stored_source, who, session_id)
        body = html.render("partials/session_summary.html", base=viewer.prefix, view=source.view,
                           problems=source.problems, page_url=source.url, first_screen=html.PAGE_ENTRIES)
        return HTMLResponse(body, headers=SECURITY_HEADERS)

    @router.get("/sessions/{session_id}/export.html")
    @guarded
    async def session_export(request: Request, who: Who, session_id: str) -> Response:
        source = await run_in_threadpool(viewer.stored_source, who, session_id)
        return _export(source)

    # -- usage over time ------------------------------------------------------------

    @router.get("/usage")
    @guarded
    async def usage_page(request: Request, who: Who, agent: str = "") -> Response:
        """Per agent: answer latency percentiles, tokens and failures over time."""
        if viewer.folio is None:
            return viewer.error(request, who, 404, "No store", "This viewer has no session store.")
        agent = agent.replace("\x00", "").strip()[:200]

        def load() -> tuple[Any, Any]:
            return (viewer.folio.sessions.agents(who.account),
                    viewer.folio.sessions.activity(who.account, agent=agent or None))

        agents, points = await run_in_threadpool(load)
        over_time = activity.activity_over_time(points)
        return viewer.page(request, "usage.html", who, nav="usage", agents=agents, agent=agent,
                           over_time=over_time, charts=usage_charts(over_time))

    # -- opened files ---------------------------------------------------------------

    @router.get("/open")
    @guarded
    async def open_page(request: Request, who: Who) -> Response:
        recent = await run_in_threadpool(viewer.opened.of_kind, who, "session", "trace", "schema_version", "body",
                                         "body_schema", "invalid")
        return viewer.page(request, "open.html", who, nav="open", recent=recent[:20])

    @router.post("/open")
    @guarded
    async def open_file(request: Request, who: Who) -> Response:
        content_type = request.headers.get("content-type", "")
        declared = int(request.headers.get("content-length") or 0)
        if declared > MAX_UPLOAD_BYTES:
            return viewer.error(request, who, 413, "File too large",
                                f"The viewer opens files up to {MAX_UPLOAD_BYTES:,} bytes.")
        if content_type.startswith("multipart/form-data"):
            form = await request.form(max_files=1, max_fields=5, max_part_size=MAX_UPLOAD_BYTES)
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                return viewer.error(request, who, 400, "No file", "Pick or drop a file to open.")
            data = await upload.read(MAX_UPLOAD_BYTES + 1)
            name = upload.filename or "upload.json"
        else:
            data = await request.body()
            name = request.headers.get("x-file-name") or "pasted.json"
        if len(data) > MAX_UPLOAD_BYTES:
            return viewer.error(request, who, 413, "File too large",
                                f"The viewer opens files up to {MAX_UPLOAD_BYTES:,} bytes.")
        items = await run_in_threadpool(viewer.opened.open_all, data, name[:200], who)
        # A span export with several conversations opens each; the open page lists them.
        target = f"{viewer.prefix}/open/{items[0].token}" if len(items) == 1 else f"{viewer.prefix}/open"
        if request.headers.get("hx-request"):
            return Response(status_code=204, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)

    @router.get("/open/{token}")
    @guarded
    async def opened_page(request: Request, who: Who, token: str, start: int = 0, show: str = "") -> Response:
        opened = await run_in_threadpool(viewer.opened.get, token, who)
        if opened is None:
            return viewer.error(request, who, 404, "Not open any more",
                                "Files opened in the viewer are kept for a day after their last look; open it again.")
        return await run_in_threadpool(_render_opened, request, who, opened, start, show)

    @router.get("/open/{token}/entries")
    @guarded
    async def opened_entries(request: Request, who: Who, token: str, start: int = 0, prefix: str = "",
                             page: int = html.PAGE_ENTRIES, show: str = "", earlier: int = 0,
                             more: int = 1) -> Response:
        opened = await run_in_threadpool(viewer.opened.get, token, who)
        if opened is None or opened.kind != "session":
            return HTMLResponse("", status_code=404, headers=SECURITY_HEADERS)
        paging = Paging(max(0, start), page, show, prefix, bool(earlier), bool(more))
        conv = await run_in_threadpool(_opened_conversation, opened, paging)
        return await run_in_threadpool(_entries, conv)

    @router.get("/open/{token}/find")
    @guarded
    async def opened_find(request: Request, who: Who, token: str, q: str = "", show: str = "") -> Response:
        opened = await run_in_threadpool(viewer.opened.get, token, who)
        if opened is None or opened.kind != "session":
            return HTMLResponse("", status_code=404, headers=SECURITY_HEADERS)
        text = _find_text(q)
        found = await run_in_threadpool(lambda: _opened_index(opened).positions(
            text=text, show=activity.valid_show(show), limit=FIND_LIMIT + 1)) if text else []
        return _found(q, found)

    def _opened_index(opened: Opened) -> SessionIndex:
        index = opened.cache.get("index")
        if index is None:
            assert opened.result is not None
            index = opened.cache.setdefault("index", SessionIndex(opened.result.session.entries))
        return cast(SessionIndex, index)

    def _opened_conversation(opened: Opened, paging: Paging) -> Conversation:
        source = viewer.opened_source(opened)
        return _conversation(lambda first, count: source, _opened_index(opened).positions, paging)

    def _find_text(q: str) -> str | None:
        return q.replace("\x00", "").strip()[:500] or None

    def _found(q: str, found: Sequence[int]) -> Response:
        return JSONResponse({"query": q, "positions": list(found[:FIND_LIMIT]), "more": len(found) > FIND_LIMIT},
                            headers=SECURITY_HEADERS)

    @router.get("/open/{token}/export.html")
    @guarded
    async def opened_export(request: Request, who: Who, token: str) -> Response:
        opened = await run_in_threadpool(viewer.opened.get, token, who)
        if opened is None or opened.kind != "session":
            return viewer.error(request, who, 404, "Not open any more", "Open the file again to export it.")
        return _export(viewer.opened_source(opened))

    def _render_opened(request: Request, who: Who, opened: Opened, start: int, show: str = "") -> Response:
        if opened.kind == "session":
            conv = _opened_conversation(opened, Paging(max(0, start), show=show))
            return viewer.page(request, "session.html", who, conv=conv, nav="open", shows=SHOWS)
        if opened.kind == "trace":
            return trace_pages.opened_trace_page(viewer, request, who, opened)
        if opened.kind == "schema_version":
            version = opened.cache.get("version") or opened.cache.setdefault(
                "version", agent_views.schema_version_view(schema_version_of(opened.document) or {}))
            return viewer.page(request, "agent_version.html", who, opened=opened, version=version, nav="agents")
        if opened.kind in ("body", "body_schema"):
            return viewer.page(request, "body.html", who, opened=opened, nav="open")
        return viewer.page(request, "opened_invalid.html", who, opened=opened, nav="open")

    def _entries(conv: Conversation) -> Response:
        body = html.render("entries_fragment.html", base=viewer.prefix, conv=conv)
        return HTMLResponse(body, headers=SECURITY_HEADERS)

    def _export(source: Source) -> Response:
        document = html.export_html(source.view.session, title=source.title, subtitle=source.subtitle,
                                    problems=source.problems)
        filename = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in source.title)[:80] or "session"
        return HTMLResponse(document, headers={"Content-Disposition": f'attachment; filename="{filename}.html"',
                                               "X-Content-Type-Options": "nosniff"})

    # -- traces and agents ----------------------------------------------------------

    trace_pages.add_routes(router, viewer, guarded)

    @router.get("/agents")
    @guarded
    async def agents_page(request: Request, who: Who) -> Response:
        return viewer.page(request, "agents.html", who, nav="agents", **await run_in_threadpool(_agents_context, who),
                           compat=None, output_schema=_EXAMPLE_OUTPUT, input_schema=_EXAMPLE_INPUT)

    @router.get("/agents/{agent_id}")
    @guarded
    async def agent_page(request: Request, who: Who, agent_id: str) -> Response:
        if not registry_data.has_registry(viewer.folio):
            return viewer.error(request, who, 404, "No store", "This viewer has no registry store.")
        overview = await run_in_threadpool(registry_data.agent_overview, viewer.folio, who.account, agent_id)
        return viewer.page(request, "agent.html", who, nav="agents", **overview)

    @router.post("/instances/{instance_id}/terminate")
    @guarded
    async def terminate_instance(request: Request, who: Who, instance_id: str) -> Response:
        if not registry_data.has_registry(viewer.folio):
            return viewer.error(request, who, 404, "No store", "This viewer has no registry store.")
        form = await request.form(max_files=0, max_fields=2)
        reason = str(form.get("reason") or "").strip()[:2000]
        try:
            stopped = await run_in_threadpool(registry_data.terminate_instance, viewer.folio, who.account,
                                              instance_id, reason)
        except AgentfolioError as error:
            if error.code == "not_found":
                raise
            return viewer.error(request, who, 409, "Cannot terminate this run", error.message)
        return RedirectResponse(f"{viewer.prefix}/agents/{quote(stopped['agent_id'], safe='')}#runs",
                                status_code=303)

    @router.get("/alerts")
    @guarded
    async def alerts_page(request: Request, who: Who, all: str = "") -> Response:
        if not registry_data.has_registry(viewer.folio):
            return viewer.error(request, who, 404, "No store", "This viewer has no registry store.")
        listed = await run_in_threadpool(registry_data.list_alerts, viewer.folio, who.account, everything=bool(all))
        return viewer.page(request, "alerts.html", who, nav="alerts", **listed)

    @router.post("/alerts/acknowledge")
    @guarded
    async def acknowledge_alerts(request: Request, who: Who) -> Response:
        if not registry_data.has_registry(viewer.folio):
            return viewer.error(request, who, 404, "No store", "This viewer has no registry store.")
        form = await request.form(max_files=0, max_fields=2)
        alert_id = None if form.get("all") else str(form.get("alert_id") or "")[:64]
        await run_in_threadpool(registry_data.acknowledge_alerts, viewer.folio, who.account, alert_id)
        return RedirectResponse(f"{viewer.prefix}/alerts", status_code=303)

    def _agents_context(who: Who) -> dict[str, Any]:
        agents: list[dict[str, Any]] = []
        profile = None
        if registry_data.has_registry(viewer.folio):
            agents, _ = registry_data.list_agents(viewer.folio, who.account)
            profile = registry_data.risk_profile(viewer.folio, who.account)
        return {"versions": viewer.opened.of_kind(who, "schema_version"), "agents": agents,
                "risk_badges": agent_views.risk_badges, "risk_profile": profile}

    @router.post("/agents/compat")
    @guarded
    async def compat(request: Request, who: Who) -> Response:
        form = await request.form(max_files=0, max_fields=4)
        output_schema = str(form.get("output_schema") or "")[:200_000]
        input_schema = str(form.get("input_schema") or "")[:200_000]
        result = await run_in_threadpool(partial(agent_views.check_compatibility, output_schema, input_schema,
                                                 timeout=viewer.compat_timeout))
        if request.headers.get("hx-request"):
            # htmx swaps only 2xx answers in: the fragment carries the refusal itself.
            return HTMLResponse(html.render("partials/compat_result.html", base=viewer.prefix, compat=result),
                                headers=SECURITY_HEADERS)
        return viewer.page(request, "agents.html", who, status=result.status, nav="agents",
                           **await run_in_threadpool(_agents_context, who),
                           compat=result, output_schema=output_schema, input_schema=input_schema)

    # -- side by side ---------------------------------------------------------------

    @router.get("/compare")
    @guarded
    async def compare_page(request: Request, who: Who, a: str = "", b: str = "", changes: int = 0) -> Response:
        sides: list[tuple[str, Conversation | tuple[str, Any]]] = []
        sources: list[Source] = []
        traces: list[tuple[str, Any]] = []
        problems = []
        for label, ref in (("left", a), ("right", b)):
            if not ref:
                continue
            found = await run_in_threadpool(viewer.source_for, who, ref)
            if found is None:
                problems.append(f"{label}: no session or open file {ref!r}")
            elif isinstance(found, Source):
                sources.append(found)
                sides.append(("session", found.conversation(prefix="L-" if label == "left" else "R-")))
            elif isinstance(found, tuple):
                sides.append(("trace", found))
                traces.append(found)
            elif found.kind == "trace":
                trace = found.cache.get("trace") or found.cache.setdefault("trace", trace_from_document(found.document))
                sides.append(("trace", (found.name, trace)))
                traces.append((found.name, trace))
            else:
                problems.append(f"{label}: {found.name} is a {found.detected or found.kind}, not a session or a trace")
        comparison = None
        if len(sources) == 2:
            comparison = await run_in_threadpool(compare_views, sources[0], sources[1], bool(changes))
        elif len(traces) == 2:
            comparison = await run_in_threadpool(compare_traces, traces[0], traces[1], bool(changes))
        choices = await run_in_threadpool(_compare_choices, who)
        return viewer.page(request, "compare.html", who, nav="compare", sides=sides, problems=problems,
                           a=a, b=b, choices=choices, comparison=comparison, changes=bool(changes))

    def _compare_choices(who: Who) -> list[tuple[str, list[tuple[str, str]]]]:
        """What either side can be, grouped: opened files, stored sessions, agent instances."""
        groups: list[tuple[str, list[tuple[str, str]]]] = [
            ("Opened files", [(f"file:{item.token}", f"{item.name} ({item.detected})")
                              for item in viewer.opened.of_kind(who, "session", "trace")])]
        if viewer.folio is not None:
            stored = viewer.folio.sessions.list(who.account, limit=100)
            groups.append(("Stored sessions", [(info.id, info.id + (f" · {info.agent}" if info.agent else "")
                                                + f" · {info.entry_count:,} entries") for info in stored]))
        if registry_data.has_registry(viewer.folio):
            recent, _ = registry_data.list_instances(viewer.folio, who.account, page_size=20)
            groups.append(("Agent instances", [(f"instance:{item['id']}", f"{item['id']} · {item['status']}")
                                               for item in recent]))
        return [(name, items) for name, items in groups if items]

    return router


@dataclass(frozen=True)
class Paging:
    """Which entries of a session a page or fragment draws."""

    start: int
    page: int = html.PAGE_ENTRIES
    show: str = ""
    prefix: str = ""
    earlier: bool = True
    more: bool = True


#: The ways a session page can be narrowed, with their labels, for its toolbar.
SHOWS = [("", activity.SHOW_LABELS[""]), *((value, activity.SHOW_LABELS[value]) for value in activity.SHOW_CHOICES)]


def _conversation(window: Callable[[int, int], Source], find: Callable[..., Sequence[int]],
                  paging: Paging) -> Conversation:
    """The conversation a page or fragment draws: ``page`` entries from ``start``, or, on a
    page narrowed to ``show``, the entries that show from the next one that does (at
    most SHOW_SPAN entries on from it), found without reading the others."""
    prefix = "".join(ch for ch in paging.prefix if ch.isalnum() or ch in "-_")[:20]
    page = max(1, min(paging.page, MAX_PAGE_ENTRIES))
    show = activity.valid_show(paging.show)
    if not show:
        return window(paging.start, page).conversation(paging.start, prefix=prefix, page=page,
                                                       earlier=paging.earlier, more=paging.more)
    found = list(find(show=show, start=paging.start, limit=page))
    if not found:
        source = window(paging.start, 1)
        end = source.view.entry_count
        return source.conversation(end, prefix=prefix, stop=end, only=[], show=show, earlier=False, more=False)
    first = found[0]
    only = [position for position in found if position - first < SHOW_SPAN]
    stop = only[-1] + 1
    return window(first, stop - first).conversation(first, prefix=prefix, stop=stop, only=only, show=show,
                                                     earlier=False, more=paging.more)


#: Most entries of each side a comparison aligns (the rest is left out, and says so).
COMPARE_ENTRIES = 2000


@dataclass
class ComparedRow:
    """One aligned row: an entry (``html.EntryView``) or a span (a trace's node) of each side."""

    status: str
    left: Any | None
    right: Any | None
    changes: list[Any] | None = None


@dataclass
class Comparison:
    left_title: str
    right_title: str
    rows: list[ComparedRow]
    counts: dict[str, int]
    cut: bool
    of: str = "turns"  # or "spans"


def compare_views(left: Source, right: Source, only_changes: bool = False) -> Comparison:
    """Two sessions' turns aligned, each changed pair with a word diff of what it says."""
    left_entries = left.view.session.entries[:COMPARE_ENTRIES]
    right_entries = right.view.session.entries[:COMPARE_ENTRIES]
    rows, counts = _compared_rows(
        compare.align_turns(left_entries, right_entries), only_changes,
        lambda row: ComparedRow(row.status, _one_entry(left.view, row.left), _one_entry(right.view, row.right)),
        lambda a, b: (compare.turn_text(left_entries[a]), compare.turn_text(right_entries[b])))
    cut = len(left.view.session.entries) > COMPARE_ENTRIES or len(right.view.session.entries) > COMPARE_ENTRIES
    return Comparison(left.title, right.title, rows, counts, cut)


def compare_traces(left: tuple[str, Any], right: tuple[str, Any], only_changes: bool = False) -> Comparison:
    """Two traces' spans aligned in tree order, each changed pair with a word diff of its
    status, params and result.  ``left``/``right``: (title, trace) as the trace pages use."""
    left_spans, right_spans = left[1].nodes[:COMPARE_ENTRIES], right[1].nodes[:COMPARE_ENTRIES]
    rows, counts = _compared_rows(
        compare.align_spans(left_spans, right_spans), only_changes,
        lambda row: ComparedRow(row.status, None if row.left is None else left_spans[row.left],
                                None if row.right is None else right_spans[row.right]),
        lambda a, b: (compare.span_text(left_spans[a]), compare.span_text(right_spans[b])))
    cut = len(left[1].nodes) > COMPARE_ENTRIES or len(right[1].nodes) > COMPARE_ENTRIES
    return Comparison(left[0], right[0], rows, counts, cut, of="spans")


def _compared_rows(aligned: list[compare.Aligned], only_changes: bool,
                   shown: Callable[[compare.Aligned], ComparedRow],
                   texts: Callable[[int, int], tuple[str, str]]) -> tuple[list[ComparedRow], dict[str, int]]:
    """The rows drawn (all, or only what differs) and how many of each status there are;
    a changed pair carries the word diff of the ``texts`` of its left and right items."""
    counts = {status: sum(row.status == status for row in aligned) for status in ("same", "changed", "left", "right")}
    rows = []
    for row in aligned:
        if only_changes and row.status == "same":
            continue
        drawn = shown(row)
        if row.status == "changed" and row.left is not None and row.right is not None:
            drawn.changes = compare.word_diff(*texts(row.left, row.right))
        rows.append(drawn)
    return rows, counts


def _one_entry(view: html.SessionView, index: int | None) -> html.EntryView | None:
    if index is None:
        return None
    found = html.entry_views(view, index, index + 1)
    return found[0] if found else None


def _local(target: str, prefix: str) -> str:
    """Only a path on this site may follow sign-in (no open redirects)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return prefix + "/"
    return target


def _iso(moment: float | None) -> str:
    if moment is None:
        return ""
    return datetime.fromtimestamp(moment, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


_EXAMPLE_OUTPUT = """{
  "parts": [
    {"content_type": "text/markdown", "required": true},
    {"name": "/attachments/*", "content_type": "image/*"}
  ]
}"""
_EXAMPLE_INPUT = """{
  "parts": [
    {"content_type": "text/{plain,markdown}", "required": true},
    {"name": "/attachments/*.png", "content_type": "image/png"}
  ]
}"""


def create_web_app(*, folio: Any = None, account: Any = None) -> FastAPI:
    """The viewer alone, as an app (the file viewer with no store; tests; the benchmark)."""
    app = FastAPI(title="agentfolio viewer", docs_url=None, redoc_url=None, openapi_url=None)
    router = create_web_router(folio=folio, account=account)
    app.include_router(router)
    app.state.viewer = router.viewer  # type: ignore[attr-defined]
    return app


def app_from_env() -> FastAPI:
    """``uvicorn --factory agentfolio.web.app:app_from_env``: the file viewer, or with
    ``AGENTFOLIO_VIEWER_STORE=1`` the local store opened as its ``default`` account."""
    import os

    if os.environ.get("AGENTFOLIO_VIEWER_STORE") == "1":
        from agentfolio.app import Agentfolio

        folio = Agentfolio.open()
        account = folio.accounts.ensure(os.environ.get("AGENTFOLIO_VIEWER_ACCOUNT", "default"))
        return create_web_app(folio=folio, account=account)
    return create_web_app()
