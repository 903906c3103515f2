"""Reference data shipped in the package (facts generated from public headers)."""
