import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def job_id_secret(deployed, api) -> bytes:
    """The deployment's job-id signing secret, read from its table, for tests that put messages straight
    on the queue: the worker runs only messages whose id verifies, so they mint ids as the API does."""
    import base64

    from shared import settings

    dynamodb = deployed.aws("dynamodb")
    key = {"pk": {"S": "config#job-id-signing-key"}}  # shared/store/id_secret.py
    item = dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key, ConsistentRead=True).get("Item")
    if item is None:  # no function has needed it yet: an enqueue creates it
        api.enqueue("echo")
        item = dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key, ConsistentRead=True)["Item"]
    return base64.b64decode(item["secret"]["S"])
