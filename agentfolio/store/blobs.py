"""Where large contents live: a folder by default, any S3-compatible store by configuration.

The store is content-addressed: a blob's key is ``sha256/<first two hex digits>/<sha256>``
of its bytes (:func:`content_key`), so one key always names the same bytes, whoever wrote
them and whatever was deleted before.  ``put`` is idempotent (it writes only what is
missing).  Which entries point at which blob is kept in the database
(``store.blob_refs``); blobs are written before the row that points at them and removed
only by the sweep, when nothing points at them.

Before content addressing, keys were ``<account>/<session>/<sha256>``
(:func:`legacy_key`); the sweep moves such blobs to their content keys and reads look in
both places meanwhile.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from agentfolio.settings import Settings, SettingsError

CONTENT_KEY = re.compile(r"sha256/([0-9a-f]{2})/(\1[0-9a-f]{62})")
LEGACY_KEY = re.compile(r"([0-9]+)/([0-9]+)/([0-9a-f]{64})")


def content_key(digest: str) -> str:
    return f"sha256/{digest[:2]}/{digest}"


def legacy_key(account_pk: int, session_pk: int, digest: str) -> str:
    return f"{account_pk}/{session_pk}/{digest}"


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` unless the key is already there."""

    def get(self, key: str) -> bytes: ...

    def delete(self, key: str) -> None:
        """Remove the key; nothing happens when it is not there."""

    def listing(self) -> Iterator[str]:
        """Every key in the store (for the sweep)."""


class BlobMissing(LookupError):
    pass


class FolderBlobStore:
    # A temporary file this old belongs to a put that died; younger ones may be in flight.
    STALE_TEMPORARY_SECONDS = 3600.0

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"bad blob key {key!r}")
        return self.root.joinpath(*parts)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        if path.exists():
            return  # content-addressed: same key, same bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobMissing(key) from None

    def delete(self, key: str) -> None:
        path = self._path(key)
        path.unlink(missing_ok=True)
        if LEGACY_KEY.fullmatch(key):
            # Nothing writes under the old per-session folders any more: drop them when empty.
            for folder in (path.parent, path.parent.parent):
                try:
                    folder.rmdir()
                except OSError:
                    break

    def listing(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        stale = time.time() - self.STALE_TEMPORARY_SECONDS
        for folder, _, files in os.walk(self.root):
            for name in files:
                path = Path(folder, name)
                if name.startswith(".tmp-"):
                    try:
                        if path.stat().st_mtime < stale:
                            path.unlink(missing_ok=True)
                    except FileNotFoundError:
                        pass
                    continue
                yield path.relative_to(self.root).as_posix()


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None, client: object = None):
        if client is None:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint_url)
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def put(self, key: str, data: bytes) -> None:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.prefix + key)  # type: ignore[attr-defined]
            return  # content-addressed: same key, same bytes
        except self.client.exceptions.ClientError as error:  # type: ignore[attr-defined]
            if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                raise
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)  # type: ignore[attr-defined]

    def get(self, key: str) -> bytes:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)  # type: ignore[attr-defined]
        except self.client.exceptions.NoSuchKey:  # type: ignore[attr-defined]
            raise BlobMissing(key) from None
        data: bytes = answer["Body"].read()  # boto3's StreamingBody, untyped here
        return data

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)  # type: ignore[attr-defined]

    def listing(self) -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")  # type: ignore[attr-defined]
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
            for item in page.get("Contents", []):
                yield item["Key"][len(self.prefix):]


def open_blob_store(settings: Settings) -> BlobStore:
    url = settings.effective_blob_url
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return FolderBlobStore(Path(unquote(parsed.path)))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise SettingsError(f"AGENTFOLIO_BLOB_URL={url!r}: expected s3://bucket/prefix")
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url=settings.s3_endpoint_url)
    if not parsed.scheme:
        return FolderBlobStore(Path(url).expanduser())
    raise SettingsError(f"AGENTFOLIO_BLOB_URL={url!r}: expected a folder, file:///path or s3://bucket/prefix")
