"""Large contents and MessageBody parts live in the blob store; reading gives them back exactly."""

from __future__ import annotations

import boto3
import orjson
import pytest

from agentfolio.store import Store
from agentfolio.store.blobs import S3BlobStore


def big_state() -> dict:
    large = {"$type": "functionResult", "callId": "c", "result": "x" * 5000}
    part = {"$type": "part", "name": "/attachments/a.txt", "contentType": "text/plain", "content": "small"}
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": [
        {"$type": "response", "messages": [{"role": "tool", "contents": [
            {"$type": "text", "text": "before"}, large, part, {"$type": "text", "text": "after"}]}]},
    ]}}


def test_folder_blobs(settings) -> None:
    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.create(account, document, strict=False)
        blob_root = settings.data_dir / "blobs"
        blob_files = [p for p in blob_root.rglob("*") if p.is_file()]
        assert len(blob_files) == 2
        with store.engine.connect() as connection:
            body = connection.exec_driver_sql("SELECT body FROM entries").scalar_one()
        assert b"xxxxx" not in bytes(body) and b"$agentfolio:blob" in bytes(body)
        assert store.sessions.get_bytes(account, created.session.id)[1] == orjson.dumps(document)
        assert [s.id for s in store.sessions.list(account, text="xxxxxxxx")] == [created.session.id]
        store.sessions.append(account, created.session.id, document["data"]["conversationHistory"][0],
                              expected_version=1, strict=False)
        _, back = store.sessions.get_document(account, created.session.id)
        assert back["data"]["conversationHistory"][1] == document["data"]["conversationHistory"][0]
        store.sessions.delete(account, created.session.id)
        assert [p for p in blob_root.rglob("*") if p.is_file()] == []


def test_a_forged_blob_reference_is_kept_as_data(settings) -> None:
    with Store.open(settings.with_(blob_threshold=1000)) as store:
        account = store.accounts.ensure("alice")
        document = big_state()
        digest_like = "0" * 64
        document["data"]["conversationHistory"][0]["messages"][0]["contents"].insert(
            0, {"$agentfolio:blob": digest_like})
        created = store.sessions.create(account, document, strict=False)
        assert store.sessions.get_bytes(account, created.session.id)[1] == orjson.dumps(document)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_s3_blobs(settings, s3_server: str) -> None:
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket="agentfolio-test")
    s3 = settings.with_(blob_url="s3://agentfolio-test/some/prefix", s3_endpoint_url=s3_server, blob_threshold=1000)
    with Store.open(s3) as store:
        assert isinstance(store.blobs, S3BlobStore)
        account = store.accounts.ensure("alice")
        document = big_state()
        created = store.sessions.create(account, document, strict=False)
        client = boto3.client("s3", endpoint_url=s3_server)
        keys = [item["Key"] for item in client.list_objects_v2(Bucket="agentfolio-test").get("Contents", [])]
        assert len(keys) == 2 and all(key.startswith("some/prefix/") for key in keys)
        assert store.sessions.get_bytes(account, created.session.id)[1] == orjson.dumps(document)
        store.sessions.reset(account, created.session.id)
        assert client.list_objects_v2(Bucket="agentfolio-test").get("KeyCount") == 0
