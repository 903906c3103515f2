"""Report views: a generic table model, drawn on the terminal (report.terminal) or as HTML (report.html)."""
