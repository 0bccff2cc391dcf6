"""`make up`: start the embedded AWS on 127.0.0.1, deploy corral into it, serve until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from local.deploy import EXAMPLE_JOBS, create_operator_key
from local.ministack import DEFAULT_PORT, STATE
from local.platform import EmbeddedStack, embedded_stack


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
        "--jobs",
        default=EXAMPLE_JOBS,
        help="your job package's folder (comma-separated for several), deployed as corral:jobs (default %(default)s)",
    )
    parser.add_argument(
        "--lambda-targets",
        default="",
        help="functions lambda jobs may invoke and the tenants allowed each (corral:lambda_targets): comma-separated "
        "pattern=tenant|tenant entries, e.g. my-fn=demo (the demo key's tenant) or my-*=* (every tenant)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with embedded_stack(
            args.port,
            sqs_through_proxy=not args.direct_sqs,  # the sidecars: `python -m local.chaos` drives their faults
            warm=not args.no_prewarm,
            jobs=args.jobs or None,
            lambda_targets=[name for name in args.lambda_targets.split(",") if name],
            announce=True,
        ) as stack:
            _serve(stack)
            print("ministack exited; see .corral/ministack.log", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        print("stopped.", flush=True)


def _serve(stack: EmbeddedStack) -> None:
    """Print how to reach the stack, then wait while the emulator runs."""
    endpoint = stack.endpoint
    endpoint.write(STATE / "endpoint.json")
    print(f"deployed in {stack.deploy_seconds:.0f}s")
    for warmed in endpoint.warmed:
        print(f"  {warmed.function}: {warmed.running} environments warm (pre-warmed in {warmed.seconds:.0f}s)")
    print()
    print(f"  API URL   : {endpoint.api_url}")
    print(f"  Dashboard : {endpoint.api_url}/dashboard   (paste the API key to sign in)")
    print(f"  API key   : {endpoint.api_key}")
    operator_key = create_operator_key(stack.aws_env, label="make up")
    print(f"  Operator  : {operator_key}   (an operator key: sign in with it for the queue and worker view)")
    print(f"  (URL and API key in {STATE / 'endpoint.json'})\n")
    print(f"  try: curl -s -X POST {endpoint.api_url}/v1/jobs -H 'Authorization: Bearer {endpoint.api_key}' \\")
    print('         -H \'content-type: application/json\' -d \'{"type": "echo", "payload": {"hello": "world"}}\'')
    print("\nCtrl-C stops everything.", flush=True)
    process = stack.emulator.process
    while process and process.poll() is None:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
