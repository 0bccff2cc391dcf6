"""Job items: records, claims, cancel and retry, the listing index."""
