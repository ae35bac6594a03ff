"""The use cases every front end shares (the CLI, the HTTP API and the viewer call this layer)."""
