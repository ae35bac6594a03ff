from tests.storage import database_url, postgres_url, settings, store  # noqa: F401
