"""Where the CLI points: the environment first, else the local stack's .corral/endpoint.json."""

import json

import pytest

from cli import target


@pytest.fixture
def local_stack(tmp_path, monkeypatch):
    for name in ("CORRAL_API_URL", "CORRAL_API_KEY", "AWS_ENDPOINT_URL", target.ENDPOINT_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".corral").mkdir()
    endpoint = {
        "api_url": "http://127.0.0.1:4566/_aws/execute-api/abc/",
        "api_key": "ck_local",
        "aws_endpoint": "http://127.0.0.1:4566",
    }
    (tmp_path / ".corral" / "endpoint.json").write_text(json.dumps(endpoint))
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from a subfolder too
    return monkeypatch


def test_the_local_stack_is_the_fallback_for_api_and_aws(local_stack):
    api = target.api()
    assert (api.url, api.key) == ("http://127.0.0.1:4566/_aws/execute-api/abc", "ck_local")
    assert target.aws_target().endpoint == "http://127.0.0.1:4566"


def test_the_environment_wins_and_a_deployed_api_means_aws(local_stack):
    local_stack.setenv("CORRAL_API_URL", "https://api.example.com")
    local_stack.setenv("CORRAL_API_KEY", "ck_prod")
    assert (target.api().url, target.api().key) == ("https://api.example.com", "ck_prod")
    assert target.aws_target() == target.Aws(where="AWS", endpoint=None)
    local_stack.setenv("AWS_ENDPOINT_URL", "http://localhost:4566")
    assert target.aws_target().endpoint == "http://localhost:4566"


def test_nothing_configured_says_what_to_do(tmp_path, monkeypatch):
    for name in ("CORRAL_API_URL", "CORRAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(target.ENDPOINT_FILE_ENV, str(tmp_path / "missing.json"))
    with pytest.raises(target.TargetError, match="make up"):
        target.api()
