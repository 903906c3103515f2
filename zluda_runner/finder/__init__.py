"""``zluda-run find``: search for a ZLUDA combination that works, judge each as ``poc`` does, lock it."""
