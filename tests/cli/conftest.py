from tests.storage import database_url, postgres_url, settings  # noqa: F401
