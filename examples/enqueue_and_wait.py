"""Enqueue a job and wait for its result.

    python -m examples.enqueue_and_wait

Output:
succeeded {'hello': 'world'}
"""

from client import Corral  # with the SDK installed (pip install ./client): from corral_client import Corral


def main() -> None:
    corral = Corral.from_env()  # CORRAL_API_URL, CORRAL_API_KEY
    job_id = corral.enqueue("echo", {"hello": "world"})
    job = corral.wait(job_id, timeout=60)
    print(job["status"], job["result"])


if __name__ == "__main__":
    main()
