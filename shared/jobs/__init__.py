"""Jobs: their types, payload checks, enqueue, far-future jobs, concurrency keys, status, listing, stats."""
