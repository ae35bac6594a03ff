from tests.storage import database_url, live, postgres_url, s3_server, settings, store  # noqa: F401
