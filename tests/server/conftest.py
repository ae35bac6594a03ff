from tests.storage import database_url, postgres_url, s3_server, settings, store  # noqa: F401
