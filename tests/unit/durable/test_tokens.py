"""Tokens (docs/decisions/durable-jobs.md "Tokens"): a capability URL that only the worker can mint, and the
token's item (shared/store/durable/token_items.py, on moto) ordering its completion and its wait."""

from __future__ import annotations

import pytest

from shared.durable import tokens
from shared.store.durable import token_items
from shared.store.durable.token_items import Completed, NotCompleted, TokenState

SECRET = b"id-secret"
NOW = 1_800_000_000.0


def _token(job: str = "jt-1", expires: float = NOW + 3600) -> str:
    token_id = tokens.mint_id()
    token_items.create(token_id, "acme", job, "approval", expires, NOW)
    return token_id


def test_a_tokens_url_carries_a_capability_only_the_id_secret_makes_for_its_tenant():
    token_id = tokens.mint_id()
    url = tokens.url("https://api.example.com/", SECRET, "acme", token_id)
    capability = url.rsplit("/", 1)[1].removesuffix(":complete")

    assert url == f"https://api.example.com/v1/tokens/{token_id}/{capability}:complete"
    assert tokens.is_token_id(token_id) and len(token_id) == 29
    assert tokens.verifies(SECRET, "acme", token_id, capability)
    assert not tokens.verifies(SECRET, "globex", token_id, capability)  # another tenant's token: no
    assert not tokens.verifies(b"another deployment", "acme", token_id, capability)
    assert not tokens.verifies(SECRET, "acme", tokens.mint_id(), capability)  # another token's: no
    # Another first character (the last may carry only padding bits, and may already be the one put in).
    tampered = ("b" if capability[0] != "b" else "c") + capability[1:]
    assert not tokens.verifies(SECRET, "acme", token_id, tampered)


def test_a_token_completes_once_and_a_second_completion_changes_nothing(aws):
    token_id = _token()

    first = token_items.complete(token_id, {"approved": True}, NOW + 1)
    second = token_items.complete(token_id, {"approved": False}, NOW + 2)

    assert isinstance(first, Completed) and first.token.data == {"approved": True}
    assert isinstance(second, NotCompleted) and second.token.state is TokenState.COMPLETED
    assert token_items.get(token_id).data == {"approved": True}


def test_an_expired_an_unknown_and_a_cancelled_token_complete_nothing(aws):
    expired, cancelled = _token(expires=NOW + 10), _token()
    token_items.cancel(cancelled)

    late = token_items.complete(expired, {}, NOW + 10)
    unknown = token_items.complete(tokens.mint_id(), {}, NOW)
    after_cancel = token_items.complete(cancelled, {}, NOW)

    assert isinstance(late, NotCompleted) and late.token.expired(NOW + 10)
    assert late.token.view(NOW + 10)["status"] == "expired"
    assert unknown == NotCompleted(None)
    assert isinstance(after_cancel, NotCompleted) and after_cancel.token.state is TokenState.CANCELLED


def test_a_completion_before_the_wait_is_found_by_the_wait_and_one_after_finds_its_waiter(aws):
    early, late = _token(), _token()

    token_items.complete(early, {"approved": True}, NOW + 1)  # the person was quicker than the job
    found = token_items.wait(early, "jt-1", "decision", 0)
    waiting = token_items.wait(late, "jt-1", "decision", 0)
    completed = token_items.complete(late, {"approved": False}, NOW + 2)

    assert found.state is TokenState.COMPLETED and found.data == {"approved": True} and found.waiter is None
    assert waiting.state is TokenState.OPEN and waiting.waiter == "decision"
    assert isinstance(completed, Completed) and completed.token.waiter == "decision"


def test_a_job_cannot_wait_for_another_jobs_token(aws):
    token_id = _token(job="jt-owner")

    other = token_items.wait(token_id, "jt-other", "decision", 0)

    assert other.job_id == "jt-owner" and other.waiter is None


def test_creating_a_token_again_for_its_step_answers_it_and_its_id_is_never_another_steps(aws):
    token_id = _token()

    again = token_items.create(token_id, "acme", "jt-1", "approval", NOW + 3600, NOW + 5)

    assert again.created_at == NOW
    with pytest.raises(ValueError, match="is taken"):
        token_items.create(token_id, "acme", "jt-2", "approval", NOW + 3600, NOW)
