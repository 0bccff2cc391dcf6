"""`make up`: start the embedded AWS on 127.0.0.1, deploy corral into it, serve until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from local.deploy import EXAMPLE_JOBS, create_operator_key, deploy
from local.ministack import DEFAULT_PORT, STATE, Ministack
from local.sidecars import Sidecars


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="emulator port (default %(default)s)")
    parser.add_argument(
        "--no-prewarm", action="store_true", help="start no execution environments before the first jobs need them"
    )
    parser.add_argument(
        "--direct-sqs", action="store_true", help="functions call SQS directly, not through the fault proxy (load runs)"
    )
    parser.add_argument(
        "--jobs", default=EXAMPLE_JOBS, help="your job package's folder, deployed as corral:jobs (default %(default)s)"
    )
    parser.add_argument(
        "--lambda-targets", default="", help="functions lambda jobs may invoke (corral:lambda_targets), comma-separated"
    )
    args = parser.parse_args()
    emulator = Ministack(port=args.port)
    sidecars = Sidecars(emulator.endpoint)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(f"starting ministack on {emulator.endpoint} ...", flush=True)
        emulator.start()
        sidecars.start()  # fault proxy + status cache (DAX's stand-in); `python -m local.chaos` drives faults
        print("deploying the corral stack (cdk bootstrap + deploy) ...", flush=True)
        started = time.monotonic()
        endpoint = deploy(
            emulator.env(),
            function_env=sidecars.function_env(sqs_through_proxy=not args.direct_sqs),
            warm=not args.no_prewarm,
            jobs=args.jobs or None,
            lambda_targets=[name for name in args.lambda_targets.split(",") if name] or None,
        )
        endpoint.write(STATE / "endpoint.json")
        print(f"deployed in {time.monotonic() - started:.0f}s")
        for warmed in endpoint.warmed:
            print(f"  {warmed.function}: {warmed.running} environments warm (pre-warmed in {warmed.seconds:.0f}s)")
        print()
        print(f"  API URL   : {endpoint.api_url}")
        print(f"  Dashboard : {endpoint.api_url}/dashboard   (paste the API key to sign in)")
        print(f"  API key   : {endpoint.api_key}")
        operator_key = create_operator_key(emulator.env(), label="make up")
        print(f"  Operator  : {operator_key}   (an operator key: sign in with it for the queue and worker view)")
        print(f"  (URL and API key in {STATE / 'endpoint.json'})\n")
        print(f"  try: curl -s -X POST {endpoint.api_url}/v1/jobs -H 'Authorization: Bearer {endpoint.api_key}' \\")
        print('         -H \'content-type: application/json\' -d \'{"type": "echo", "payload": {"hello": "world"}}\'')
        print("\nCtrl-C stops everything.", flush=True)
        while emulator.process and emulator.process.poll() is None:
            time.sleep(1)
        print("ministack exited; see .corral/ministack.log", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        sidecars.stop()
        emulator.stop()
        print("stopped.", flush=True)


if __name__ == "__main__":
    sys.exit(main())
