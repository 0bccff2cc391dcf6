"""AWS adapters: boto3 clients, the job queue, EventBridge Scheduler, the status cache, metrics."""
