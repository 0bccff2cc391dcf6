"""What a job's end sets off: its batch's count and callbacks, its own callbacks (and batches themselves)."""
