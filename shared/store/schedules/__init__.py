"""Schedule items: customer schedules' records and the runs their firings became."""
