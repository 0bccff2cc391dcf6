"""What the scenarios share: the timeline, the enqueue load, faults, measurement, SLO figures, the report."""
