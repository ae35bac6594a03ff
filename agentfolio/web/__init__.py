"""The web viewer: server-rendered pages over the store and over files opened in place.

``agentfolio.web.app.create_web_router(...)`` is mounted at ``/`` by ``agentfolio serve``;
``create_web_app(...)`` is the same pages as a standalone app (tests, the benchmark).
"""
