"""Training utilities: metrics (more to come: Model, callbacks)."""
