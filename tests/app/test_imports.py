"""Importing files in batches: a file refused is reported and the rest of its batch is
stored; an import stopped part-way and run again stores each file exactly once; a file
another importer stored meanwhile is skipped, not a failure of its batch."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agentfolio.app import Agentfolio
from agentfolio.app import imports as imports_module
from agentfolio.app.imports import FIRST_BATCH_FILES, ImportOutcome, import_files
from agentfolio.samples import synthetic_durable_state
from agentfolio.store import Store


@pytest.fixture
def folio(store: Store) -> Agentfolio:
    return Agentfolio(store, owned=False)


def write_states(folder: Path, count: int) -> dict[Path, bytes]:
    folder.mkdir(exist_ok=True)
    written = {}
    for index in range(count):
        data = orjson.dumps(synthetic_durable_state(4, seed=index) | {"unknown": {"kept": index}})
        path = folder / f"state-{index:03d}.json"
        path.write_bytes(data)
        written[path] = data
    return written


def stored_sources(folio: Agentfolio, account_name: str) -> list[bytes]:
    account = folio.accounts.ensure(account_name)
    return sorted(folio.sessions.read_bytes(account, info.id)[1]
                  for info in folio.sessions.list(account, limit=1000))


def test_a_bad_file_is_reported_and_the_rest_of_its_batch_stored(folio: Agentfolio, tmp_path: Path) -> None:
    written = write_states(tmp_path / "in", 5)
    (tmp_path / "in" / "state-001b.json").write_bytes(b'{"schemaVersion": "1.1.0", "data": ')  # not JSON
    (tmp_path / "in" / "state-002b.json").write_bytes(orjson.dumps({"schemaVersion": "9.0.0", "data": {}}))
    account = folio.accounts.ensure("acme")
    outcomes = import_files(folio, account, [tmp_path / "in"])
    by_name = {outcome.path.name: outcome for outcome in outcomes}
    assert [outcome.path.name for outcome in outcomes] == sorted(by_name)  # in the files' order
    assert by_name["state-001b.json"].status == "failed" and "state-001b.json" in str(by_name["state-001b.json"].error)
    assert by_name["state-002b.json"].status == "failed" and "9" in str(by_name["state-002b.json"].error)
    assert [outcome.status for name, outcome in by_name.items() if not name.endswith("b.json")] == ["stored"] * 5
    # Each stored session gives back its file's bytes exactly (unknown properties kept).
    assert stored_sources(folio, "acme") == sorted(written.values())
    # Another account sees none of them.
    assert stored_sources(folio, "other") == []


def test_a_stopped_import_run_again_stores_each_file_once(folio: Agentfolio, tmp_path: Path) -> None:
    written = write_states(tmp_path / "in", FIRST_BATCH_FILES * 3 + 1)
    account = folio.accounts.ensure("acme")
    seen: list[ImportOutcome] = []

    def stop_after_first_batch(outcome: ImportOutcome) -> None:
        seen.append(outcome)
        if len(seen) == FIRST_BATCH_FILES:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_files(folio, account, [tmp_path / "in"], on_file=stop_after_first_batch)
    assert 0 < len(stored_sources(folio, "acme")) < len(written)
    assert {outcome.status for outcome in seen} == {"stored"}

    again = import_files(folio, account, [tmp_path / "in"])
    statuses = [outcome.status for outcome in again]
    assert statuses.count("skipped") == FIRST_BATCH_FILES
    assert statuses.count("stored") == len(written) - FIRST_BATCH_FILES
    assert {outcome.session_id for outcome in again if outcome.status == "skipped"} == \
        {outcome.session_id for outcome in seen}
    assert stored_sources(folio, "acme") == sorted(written.values())  # each once, whole


def test_the_same_bytes_twice_in_one_batch_store_one_session(folio: Agentfolio, tmp_path: Path) -> None:
    written = write_states(tmp_path / "in", 2)
    copy = tmp_path / "in" / "state-999-copy.json"
    copy.write_bytes(written[tmp_path / "in" / "state-000.json"])
    account = folio.accounts.ensure("acme")
    outcomes = {outcome.path.name: outcome for outcome in import_files(folio, account, [tmp_path / "in"])}
    assert outcomes["state-000.json"].status == "stored"
    assert outcomes["state-999-copy.json"].status == "skipped"
    assert outcomes["state-999-copy.json"].session_id == outcomes["state-000.json"].session_id
    assert stored_sources(folio, "acme") == sorted(written.values())


def test_a_file_stored_meanwhile_by_another_import_is_skipped(folio: Agentfolio, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    written = write_states(tmp_path / "in", 4)
    account = folio.accounts.ensure("acme")
    # Another importer stores one file after this one looked for the batch's files.
    [earlier] = import_files(folio, account, [tmp_path / "in" / "state-002.json"])
    monkeypatch.setattr(folio.sessions, "find_imported_many", lambda *_: {})
    outcomes = {outcome.path.name: outcome for outcome in import_files(folio, account, [tmp_path / "in"])}
    assert outcomes["state-002.json"].status == "skipped"
    assert outcomes["state-002.json"].session_id == earlier.session_id
    assert [outcomes[name].status for name in ("state-000.json", "state-001.json", "state-003.json")] == \
        ["stored"] * 3
    assert stored_sources(folio, "acme") == sorted(written.values())


def test_batches_grow_and_stay_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    files = list(write_states(tmp_path / "in", 60))
    sizes = [len(batch) for batch in imports_module._read_batches(files, 1 << 20)]
    assert sizes[0] == FIRST_BATCH_FILES and sum(sizes) == 60
    assert sizes[:3] == [FIRST_BATCH_FILES, FIRST_BATCH_FILES * 2, FIRST_BATCH_FILES * 4]
    monkeypatch.setattr(imports_module, "BATCH_BYTES", 1)  # every file over the bytes a batch may hold
    assert {len(batch) for batch in imports_module._read_batches(files, 1 << 20)} == {1}


def test_files_one_account_imported_are_new_to_another(folio: Agentfolio, tmp_path: Path) -> None:
    written = write_states(tmp_path / "in", 3)
    first = import_files(folio, folio.accounts.ensure("acme"), [tmp_path / "in"])
    second = import_files(folio, folio.accounts.ensure("globex"), [tmp_path / "in"])
    assert [outcome.status for outcome in first + second] == ["stored"] * 6
    assert stored_sources(folio, "acme") == stored_sources(folio, "globex") == sorted(written.values())


def test_a_long_history_of_hard_text_comes_back_exactly(folio: Agentfolio, tmp_path: Path) -> None:
    # Enough entries that PostgreSQL gets them by COPY, whose text format escapes these.
    hard = "tab\there\nnew line \\N back\\slash \x00 nul \r é 中文 🙂 \\. end"
    history = [{"$type": "request", "createdAt": f"2025-01-01T00:00:{index % 60:02d}Z",
                "messages": [{"role": "user", "contents": [{"$type": "text", "text": f"{hard} {index}"}]}]}
               for index in range(200)]
    data = orjson.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}})
    (tmp_path / "hard.json").write_bytes(data)
    account = folio.accounts.ensure("acme")
    [outcome] = import_files(folio, account, [tmp_path / "hard.json"])
    assert outcome.status == "stored" and outcome.session_id is not None
    assert folio.sessions.read_bytes(account, outcome.session_id)[1] == data
    assert folio.sessions.find_positions(account, outcome.session_id, text="back\\slash \ufffd nul") == \
        list(range(200))


def test_a_copy_of_a_file_the_batch_before_is_still_writing_is_skipped(folio: Agentfolio, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer stores a batch while the next one is prepared: a copy in the next batch of
    # a file of that batch (not committed yet, so not found stored) is that file's session.
    written = write_states(tmp_path / "in", FIRST_BATCH_FILES)
    copy = tmp_path / "in" / f"state-{FIRST_BATCH_FILES - 1:03d}z.json"  # the first file of the second batch
    copy.write_bytes(written[tmp_path / "in" / "state-000.json"])
    alone: list[str] = []
    store_alone = imports_module._store_alone
    monkeypatch.setattr(imports_module, "_store_alone",
                        lambda *args: alone.append(args[-1].session_id) or store_alone(*args))
    account = folio.accounts.ensure("acme")
    outcomes = {outcome.path.name: outcome for outcome in import_files(folio, account, [tmp_path / "in"])}
    assert outcomes[copy.name].status == "skipped"
    assert outcomes[copy.name].session_id == outcomes["state-000.json"].session_id is not None
    assert alone == []  # known as a copy, not found out by a refused insert
    assert stored_sources(folio, "acme") == sorted(written.values())


def test_a_file_of_another_format_is_stored_as_its_conversion(folio: Agentfolio) -> None:
    from agentfolio.formats.convert import convert
    from agentfolio.formats.jsonio import load_json_file

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    names = ("openai/chat-request.json", "anthropic/gallery.json", "gemini/gallery.json", "langchain/gallery.json",
             "envelope/gallery.json", "openai_responses/gallery.json", "a2a/gallery.json")
    account = folio.accounts.ensure("acme")
    outcomes = import_files(folio, account, [fixtures / name for name in names])
    assert [outcome.status for outcome in outcomes] == ["stored"] * len(names)
    assert len({outcome.format for outcome in outcomes}) == len(names)
    for outcome in outcomes:
        assert outcome.session_id is not None and outcome.format is not None
        converted = convert(load_json_file(outcome.path), to="durable-state", from_=outcome.format,
                            strict_read=False).result
        assert orjson.loads(folio.sessions.read_bytes(account, outcome.session_id)[1]) == converted
        info = folio.sessions.info(account, outcome.session_id)
        assert info.entry_count == len(converted["data"]["conversationHistory"])


def test_an_import_shortens_the_switch_interval_while_it_runs_and_puts_it_back(folio: Agentfolio,
                                                                             tmp_path: Path) -> None:
    import sys

    write_states(tmp_path / "in", 3)
    account = folio.accounts.ensure("acme")
    before = sys.getswitchinterval()
    during: list[float] = []
    import_files(folio, account, [tmp_path / "in"], on_file=lambda _: during.append(sys.getswitchinterval()))
    assert during and all(seen == pytest.approx(imports_module.HANDOFF_SECONDS) and seen < before for seen in during)
    assert sys.getswitchinterval() == before

    def stop(_: ImportOutcome) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_files(folio, account, [tmp_path / "in"], on_file=stop)
    assert sys.getswitchinterval() == before
