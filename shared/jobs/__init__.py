"""Jobs: their types, enqueue, status, listing, stats, cancel and retry."""
