"""Flow control's items: throttle start logs, debounce holders, unique locks, triggers."""
