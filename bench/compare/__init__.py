"""`make compare`: the benchmark's timeline against corral, a bare SQS→Lambda pipeline and Celery on SQS.

run.py drives it (`python -m bench.compare`); systems.py says what differs between the three;
figures.py turns what they left into compare.json's figures; bare/ is the bare pipeline's CDK app;
celery_app.py and celery_load.py are the Celery harness, which runs in its own venv
(.corral/celery-venv, celery_venv.py) and is the only code here importing Celery; profile.py profiles
corral's handlers per job (`python -m bench.compare.profile`). names.py holds the names both sides use.
"""
