"""Running one job's code, for the worker and the jobs function alike: the fence's job side, the timeout, job logs."""
