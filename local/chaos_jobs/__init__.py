"""Job types for fault tests, deployed only by the local profile (infra/jobs_package.py adds this package).

They kill their own worker or return more than the store keeps, so the aws profile's bundle does not
contain them at all. Written as any job package is (`corral_jobs`' `job_type`), and loaded like one.
"""
