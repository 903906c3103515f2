"""The results store: every recorded run, kept (schema, backends, recording, queries, matrix, bundle)."""
