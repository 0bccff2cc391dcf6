"""`make compare`: the benchmark's timeline against corral, a bare SQS→Lambda pipeline and Celery on SQS.

bench/compare/run.py drives it; bare/ is the bare pipeline's CDK app, celery_app.py and celery_load.py
the Celery harness (run in their own venv, .corral/celery-venv). Kept importable without Celery: the
harness modules run in that venv only.
"""
