"""The bare API: one SendMessage per POST /v1/jobs; GET /v1/jobs/<id> reads the table.

No claims, quotas, rate limits, payload checks or status cache: what anyone wires from the same AWS
parts. The key is compared with one the deploy set, in memory (no store read).
"""

import base64
import json
import os
import time
import uuid
from typing import Any

# botocore is what boto3's clients are made of: the emulator's runtime has botocore without boto3
# (AWS's Python runtimes have both), and a call costs the same through either.
import botocore.session

_session = botocore.session.get_session()
sqs = _session.create_client("sqs")
dynamodb = _session.create_client("dynamodb")
QUEUE_URL = os.environ["BARE_QUEUE_URL"]
TABLE = os.environ["BARE_TABLE"]
AUTHORIZATION = f"Bearer {os.environ['BARE_API_KEY']}"


def _answer(status: int, document: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(document)}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if (event.get("headers") or {}).get("authorization") != AUTHORIZATION:
        return _answer(401, {"error": "unauthorized"})
    method = event["requestContext"]["http"]["method"]
    path = event.get("rawPath", "")
    if method == "POST" and path == "/v1/jobs":
        body = event.get("body") or "{}"
        request = json.loads(base64.b64decode(body) if event.get("isBase64Encoded") else body)
        job_id = uuid.uuid4().hex
        message = {"id": job_id, "type": request.get("type"), "payload": request.get("payload")}
        message["enqueued_at"] = time.time()
        sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=json.dumps(message))
        return _answer(202, {"id": job_id, "status": "queued"})
    if method == "GET" and path.startswith("/v1/jobs/"):
        job_id = path.removeprefix("/v1/jobs/")
        item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"job#{job_id}"}}).get("Item")
        return _answer(200, {"id": job_id, "status": item["status"]["S"] if item else "queued"})
    return _answer(404, {"error": "not_found"})
