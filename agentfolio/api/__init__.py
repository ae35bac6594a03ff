"""The HTTP service: ``create_app(settings)`` builds it; each area adds its own router."""
