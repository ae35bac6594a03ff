"""Use cases every front end (API, viewer, CLI) shares, on top of the domain and the store."""
