"""The worker: runs a delivered job and settles its outcome."""
