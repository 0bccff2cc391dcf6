"""`python -m bench.scenarios.get_item_rate`: rough GetItem rates of a running embedded stack (after `make up`).

One item read 1,500 times from 4 threads, straight from the emulator, through the fault proxy and
through the DAX stand-in: what each hop in front of the store costs on this machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3

from local.chaos import Chaos
from local.ministack import CREDENTIALS, STATE
from shared import settings


def measure_get_item(endpoint: str, total: int = 1500, threads: int = 4) -> float:
    """GetItem of one key `total` times from `threads` threads through `endpoint`; requests per second."""
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    key = {"pk": {"S": "measure#status-cache"}}
    dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key)  # warm the connection (and the cache entry)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda _: dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key), range(total)))
    return total / (time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scenarios.get_item_rate", description=__doc__)
    parser.add_argument("--state", type=Path, default=STATE, help="the stack's state dir (default .corral)")
    args = parser.parse_args(argv)
    chaos = Chaos.of(args.state)
    hops = (("emulator", chaos.emulator), ("fault proxy", chaos.proxy_url), ("status cache", chaos.cache_url))
    for name, url in hops:
        print(f"{name:>12}: {measure_get_item(url):6.0f} GetItem/s (1,500 requests, 4 threads)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
