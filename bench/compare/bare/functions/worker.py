"""The bare worker: for each message of the batch, run the job (echo) and write its outcome with one
unconditional PutItem. No claim, lease or idempotency: a message delivered twice runs and records
twice. An exception fails the whole batch (no partial-batch answer), and SQS delivers it all again.
"""

import json
import os
import time
from typing import Any

import botocore.session  # see api.py: boto3's clients, without boto3

dynamodb = botocore.session.get_session().create_client("dynamodb")
TABLE = os.environ["BARE_TABLE"]


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        message = json.loads(record["body"])
        started_at = time.time()
        result = message.get("payload")  # echo
        # One line per run, naming the job: the benchmark counts the jobs run more than once.
        print(json.dumps({"ran": message["id"]}))
        # A schedule's firing carries no time of its own: it entered the queue when SQS stamped it.
        enqueued_at = message.get("enqueued_at") or int(record["attributes"]["SentTimestamp"]) / 1000
        item = {
            "pk": {"S": f"job#{message['id']}"},
            "status": {"S": "succeeded"},
            "attempts": {"N": "1"},
            "enqueued_at": {"N": repr(enqueued_at)},
            "started_at": {"N": repr(started_at)},
            "finished_at": {"N": repr(time.time())},
            "result": {"S": json.dumps(result)},
        }
        if message.get("schedule"):
            item["schedule_name"] = {"S": message["schedule"]}
        dynamodb.put_item(TableName=TABLE, Item=item)
