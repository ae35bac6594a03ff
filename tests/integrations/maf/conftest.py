from tests.storage import database_url, live, postgres_url, settings, store  # noqa: F401
