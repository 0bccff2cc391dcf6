"""The names `make compare` gives the other systems' resources: shared by their deploy or harness (in
the Celery venv too) and the run that drives them, without importing CDK or Celery."""

BARE_STACK = "bare"
BARE_NAME = "bare-jobs"  # the bare pipeline's queue and table
BARE_API_FUNCTION = "bare-api"
BARE_WORKER_FUNCTION = "bare-worker"
CELERY_QUEUE = "celery-compare"
CELERY_RESULTS_TABLE = "celery-compare"
