"""Large contents and MessageBody parts live in the blob store; reading gives them back exactly."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import orjson
import pytest

from agentfolio.store import Store
from agentfolio.store.blobs import S3BlobStore


def big_state() -> dict:
    # A word in content moved to the blob store stays searchable.  (One 5,000-letter word
    # would not be: PostgreSQL indexes words of up to 2,047 characters.)
    large = {"$type": "functionResult", "callId": "c", "result": "needle " + "x" * 5000}
    part = {"$type": "part", "name": "/attachments/a.txt", "contentType": "text/plain", "content": "small"}
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": [
        {"$type": "response", "messages": [{"role": "tool", "contents": [
            {"$type": "text", "text": "before"}, large, part, {"$type": "text", "text": "after"}]}]},
    ]}}


def test_folder_blobs(settings) -> None:
    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.of(account).create(document, strict=False)
        blob_root = settings.data_dir / "blobs"
        blob_files = [p for p in blob_root.rglob("*") if p.is_file()]
        assert len(blob_files) == 2
        with store.engine.connect() as connection:
            body = connection.exec_driver_sql("SELECT body FROM entries").scalar_one()
        assert b"xxxxx" not in bytes(body) and b"$agentfolio:blob" in bytes(body)
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)
        assert [s.id for s in store.sessions.of(account).list(text="needle")] == [created.session.id]
        store.sessions.of(account).append(created.session.id, document["data"]["conversationHistory"][0],
                              expected_version=1, strict=False)
        _, back = store.sessions.of(account).get_document(created.session.id)
        assert back["data"]["conversationHistory"][1] == document["data"]["conversationHistory"][0]
        store.sessions.of(account).delete(created.session.id)
        # Deleting leaves the blobs to the sweep, which removes them once nothing points at them.
        assert len([p for p in blob_root.rglob("*") if p.is_file()]) == 2
        assert store.sweep_blobs().deleted == 2
        assert [p for p in blob_root.rglob("*") if p.is_file()] == []


def test_a_forged_blob_reference_is_kept_as_data(settings) -> None:
    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        digest_like = "0" * 64
        document["data"]["conversationHistory"][0]["messages"][0]["contents"].insert(
            0, {"$agentfolio:blob": digest_like})
        created = store.sessions.of(account).create(document, strict=False)
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_s3_blobs(settings, s3_server: str) -> None:
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket="agentfolio-test")
    s3 = settings.with_(blob_url="s3://agentfolio-test/some/prefix", s3_endpoint_url=s3_server, blob_threshold=1000)
    with Store.open(s3) as store:
        assert isinstance(store.blobs, S3BlobStore)
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.of(account).create(document, strict=False)
        client = boto3.client("s3", endpoint_url=s3_server)
        keys = [item["Key"] for item in client.list_objects_v2(Bucket="agentfolio-test").get("Contents", [])]
        assert len(keys) == 2 and all(key.startswith("some/prefix/") for key in keys)
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)
        store.sessions.of(account).reset(created.session.id)
        assert client.list_objects_v2(Bucket="agentfolio-test").get("KeyCount") == 2
        assert store.sweep_blobs().deleted == 2
        assert client.list_objects_v2(Bucket="agentfolio-test").get("KeyCount") == 0


class SlowBlobs:
    """The folder store with every removal slowed down, as an S3 round trip would be: it
    widens the window in which a write can land between a commit and the work after it."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        attribute = getattr(self.inner, name)
        if name.startswith("delete"):
            def slowly(*args, **kwargs):
                time.sleep(0.01)
                return attribute(*args, **kwargs)
            return slowly
        return attribute


def _entry(label: str, shared: bool) -> dict:
    text = ("shared " if shared else f"{label} ") * 200
    return {"$type": "response", "messages": [{"role": "tool", "contents": [
        {"$type": "functionResult", "callId": label, "result": text}]}]}


PAIRS = 150


def test_racing_resets_deletes_and_creates_keep_every_acknowledged_blob(settings) -> None:
    """(reset ‖ append) and (delete ‖ create) race in pairs with blob-sized entries while a
    sweep runs: every write that committed returns, and every acknowledged session reads
    back whole; the sweep then leaves exactly the blobs still referenced."""
    with Store.open(settings.with_(blob_threshold=1000)) as opened:
        store = Store(opened.settings, opened.engine, SlowBlobs(opened.blobs))
        account = store.accounts.ensure("racer")
        empty = {"schemaVersion": "1.2.0", "data": {"conversationHistory": []}}
        expected: dict[str, dict] = {}
        failures: list[str] = []
        stop = threading.Event()

        def attempt(what: str, call, *args, **kwargs) -> None:
            try:
                call(*args, **kwargs)
            except Exception as error:
                failures.append(f"{what}: {type(error).__name__}: {error}")

        def reset_and_append(number: int) -> None:
            session = f"ra-{number}"
            earlier = _entry(f"{session}-old", shared=False)
            store.sessions.of(account).create({**empty, "data": {"conversationHistory": [earlier]}},
                                  session_id=session)
            entry = expected[session] = _entry(session, shared=number % 2 == 0)
            with ThreadPoolExecutor(2) as pair:
                pair.submit(attempt, f"reset {session}", store.sessions.of(account).reset, session)
                pair.submit(attempt, f"append {session}", store.sessions.of(account).append, session, entry,
                            expected_version=None)

        def delete_and_create(number: int) -> None:
            doomed, fresh = f"dc-old-{number}", f"dc-new-{number}"
            store.sessions.of(account).create({**empty, "data": {"conversationHistory": [
                _entry(doomed, shared=number % 2 == 0)]}}, session_id=doomed)
            entry = expected[fresh] = _entry(fresh, shared=number % 2 == 0)
            with ThreadPoolExecutor(2) as pair:
                pair.submit(attempt, f"delete {doomed}", store.sessions.of(account).delete, doomed)
                pair.submit(attempt, f"create {fresh}", store.sessions.of(account).create,
                            {**empty, "data": {"conversationHistory": [entry]}}, session_id=fresh)

        def sweep_meanwhile() -> None:
            while not stop.is_set():
                attempt("sweep", store.sweep_blobs)

        sweeper = threading.Thread(target=sweep_meanwhile)
        sweeper.start()
        try:
            with ThreadPoolExecutor(4) as pool:
                jobs = [pool.submit(reset_and_append, n) for n in range(PAIRS)]
                jobs += [pool.submit(delete_and_create, n) for n in range(PAIRS)]
                for job in jobs:
                    job.result()
        finally:
            stop.set()
            sweeper.join()
        assert failures == [], f"{len(failures)} writes failed, first: {failures[:5]}"

        unreadable = []
        for session in [f"ra-{n}" for n in range(PAIRS)] + [f"dc-new-{n}" for n in range(PAIRS)]:
            try:
                _, document = store.sessions.of(account).get_document(session)
            except Exception as error:
                unreadable.append(f"{session}: {type(error).__name__}")
                continue
            for entry in document["data"]["conversationHistory"]:
                label = entry["messages"][0]["contents"][0]["callId"]
                if label != f"{session}-old" and entry != expected[session]:
                    unreadable.append(f"{session}: entry {label} changed")
        assert unreadable == [], f"{len(unreadable)} acknowledged sessions unreadable, first: {unreadable[:5]}"
        assert store.sessions.of(account).list(limit=1000, offset=0) and not any(
            info.id.startswith("dc-old-") for info in store.sessions.of(account).list(limit=1000))


def test_one_process_sweeps_at_a_time_on_postgresql(settings) -> None:
    """Another process holding the sweep's advisory lock makes this sweep skip its round."""
    import sqlalchemy as sa

    from agentfolio.store.blob_refs import SWEEP_LOCK_KEY

    with Store.open(settings) as store:
        if store.engine.dialect.name != "postgresql":
            assert store.sweep_blobs().skipped is False
            return
        other = sa.create_engine(settings.effective_database_url)
        with other.connect() as connection:
            assert connection.exec_driver_sql(f"SELECT pg_try_advisory_lock({SWEEP_LOCK_KEY})").scalar_one()
            assert store.sweep_blobs().skipped is True
            connection.exec_driver_sql(f"SELECT pg_advisory_unlock({SWEEP_LOCK_KEY})")
        other.dispose()
        assert store.sweep_blobs().skipped is False


def test_blobs_stored_under_old_per_session_keys_are_read_and_moved(settings) -> None:
    """Blobs written before content addressing (``<account>/<session>/<sha256>``) still read
    back; the sweep moves the referenced ones to their content keys and drops the rest."""
    from agentfolio.store.blobs import content_key, legacy_key

    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.of(account).create(document, strict=False)
        with store.engine.connect() as connection:
            session_pk = connection.exec_driver_sql("SELECT pk FROM sessions").scalar_one()
            digests = [row[0] for row in connection.exec_driver_sql("SELECT digest FROM entry_blobs")]
        root = settings.data_dir / "blobs"
        for digest in digests:  # as an older version left them
            data = store.blobs.get(content_key(digest))
            store.blobs.delete(content_key(digest))
            store.blobs.put(legacy_key(account.pk, session_pk, digest), data)
        left = b"left by a deleted session"
        store.blobs.put(legacy_key(account.pk, session_pk + 1, hashlib.sha256(left).hexdigest()), left)
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)

        swept = store.sweep_blobs()
        assert swept.moved == len(digests) + 1
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == sorted(
            content_key(digest) for digest in digests)
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)


def test_bytes_a_rolled_back_write_left_are_swept_and_referenced_ones_kept(settings) -> None:
    from agentfolio.store.blobs import content_key

    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.of(account).create(document, strict=False)
        stray = b"bytes whose transaction rolled back"
        store.blobs.put(content_key(hashlib.sha256(stray).hexdigest()), stray)
        assert store.sweep_blobs().deleted == 1
        root = settings.data_dir / "blobs"
        assert len([p for p in root.rglob("*") if p.is_file()]) == 2
        assert store.sessions.of(account).get_bytes(created.session.id)[1] == orjson.dumps(document)
