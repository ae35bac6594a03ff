"""Where large contents live: a folder by default, any S3-compatible store by configuration.

Keys are ``<account>/<session>/<sha256>``; a session's blobs go with it (reset, delete).
A blob is written before the transaction that refers to it commits, so a crash leaves at
worst an unreferenced blob, never a reference to a missing one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from agentfolio.settings import Settings, SettingsError


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def delete_prefix(self, prefix: str) -> None: ...


class BlobMissing(LookupError):
    pass


class FolderBlobStore:
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

    def delete_prefix(self, prefix: str) -> None:
        folder = self._path(prefix.rstrip("/"))
        if not folder.is_dir():
            return
        for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
        folder.rmdir()


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None, client: object = None):
        if client is None:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint_url)
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)  # type: ignore[attr-defined]

    def get(self, key: str) -> bytes:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)  # type: ignore[attr-defined]
        except self.client.exceptions.NoSuchKey:  # type: ignore[attr-defined]
            raise BlobMissing(key) from None
        return answer["Body"].read()

    def delete_prefix(self, prefix: str) -> None:
        paginator = self.client.get_paginator("list_objects_v2")  # type: ignore[attr-defined]
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix.rstrip("/") + "/"):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})  # type: ignore[attr-defined]


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
