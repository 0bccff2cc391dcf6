"""Running an admitted job: its code in process or behind the fence (the jobs function), under the batch's cover."""
