"""API keys: the checksum rejects made-up keys before any I/O, the caches keep real keys through a
flood, and operators list and revoke keys without ever seeing a secret."""

from __future__ import annotations

import secrets
import string
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.api.handler import handler
from local.events import FakeLambdaContext, http_api_event
from shared import environment
from shared.aws.clients import client
from shared.store.tenants import tenant_items
from shared.tenants import api_keys, operators, tenants


def test_minted_keys_pass_their_checksum_and_one_changed_character_fails():
    key = api_keys.mint()
    assert api_keys.is_well_formed(key)
    for position in range(len(api_keys.PREFIX), len(key)):
        other = "A" if key[position] != "A" else "B"
        assert not api_keys.is_well_formed(key[:position] + other + key[position + 1 :])


@given(st.text(alphabet=string.ascii_letters + string.digits, min_size=38, max_size=38))
def test_made_up_keys_of_the_right_shape_almost_never_pass(body):
    # CRC32 lets one in 2^32 through; hypothesis would need billions of tries to find one.
    assert not api_keys.is_well_formed("ck_" + body)


def test_La_keys_without_a_checksum_are_malformed():
    assert not api_keys.is_well_formed("ck_" + secrets.token_urlsafe(32))  # the earliest keys' format
    assert not api_keys.is_well_formed("co_" + secrets.token_urlsafe(32), operators.KEY_PREFIX)
    assert not api_keys.is_well_formed("ck_short")
    assert not api_keys.is_well_formed("")


def test_a_bad_checksum_costs_no_lookup(aws, monkeypatch):
    def no_io(*_args, **_kwargs):
        raise AssertionError("a malformed key reached the store")

    monkeypatch.setattr(tenant_items, "client", no_io)
    key = api_keys.mint()
    assert tenants.tenant_for(key[:-1] + ("x" if key[-1] != "x" else "y")) is None
    assert tenants.tenant_for("ck_" + "A" * 38) is None
    assert tenants.tenant_for("Bearer nonsense") is None


def test_a_flood_of_unknown_keys_never_evicts_a_real_one(aws, monkeypatch):
    real = tenants.create_key("acme", label="prod")
    assert tenants.tenant_for(real) == "acme"
    monkeypatch.setattr(tenants._lookup, "unknown_limit", 50)
    for _ in range(200):
        assert tenants.tenant_for(api_keys.mint()) is None
    assert len(tenants._lookup.unknown) == 50

    def store_down(*_args, **_kwargs):
        raise AssertionError("the real key was looked up again")

    monkeypatch.setattr(tenant_items, "client", store_down)
    assert tenants.tenant_for(real) == "acme"  # still cached


def test_an_unknown_key_is_looked_up_once_within_its_cache_time(aws, monkeypatch):
    calls = []
    real_client = client("dynamodb")

    class Counting:
        def get_item(self, **kwargs):
            calls.append(kwargs)
            return real_client.get_item(**kwargs)

    monkeypatch.setattr(tenant_items, "client", lambda _service: Counting())
    unknown = api_keys.mint()
    for _ in range(5):
        assert tenants.tenant_for(unknown) is None
    assert len(calls) == 1


class _StoreWithoutTheKey:
    """The store's client for key lookups: it holds none of the keys asked for, and counts the reads."""

    def __init__(self) -> None:
        self.reads = 0

    def get_item(self, **_kwargs):
        self.reads += 1
        return {}


@given(st.lists(st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=43, max_size=43), max_size=50))
def test_La_made_up_keys_without_a_checksum_cost_no_store_read(bodies):
    tenants.clear_caches()
    operators.clear_cache()
    store = _StoreWithoutTheKey()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tenant_items, "client", lambda _service: store)
        for body in bodies:
            assert tenants.tenant_for("ck_" + body) is None
            assert not operators.is_operator("co_" + body)
    assert store.reads == 0


def test_La_a_key_without_a_checksum_in_the_store_opens_nothing_and_can_be_revoked(aws):
    legacy = "ck_" + secrets.token_urlsafe(32)
    client("dynamodb").put_item(
        TableName="corral-jobs", Item={"pk": {"S": "apikey#" + api_keys.digest(legacy)}, "tenant": {"S": "old"}}
    )
    assert tenants.tenant_for(legacy) is None
    answer = handler(http_api_event("GET", "/v1/jobs", api_key=legacy), FakeLambdaContext())
    assert answer["statusCode"] == 401
    assert tenants.revoke_key(legacy).tenant == "old"  # the migration's clean-up: the item goes


def test_keys_are_listed_without_secrets_and_revoked_by_id(aws):
    first = tenants.create_key("acme", label="ci")
    second = tenants.create_key("acme", label="prod")
    tenants.create_key("other", label="x")
    listed = tenants.list_keys("acme")
    assert [k.label for k in listed] == ["ci", "prod"]
    assert {k.last4 for k in listed} == {first[-4:], second[-4:]}
    for info in listed:
        assert first not in repr(info) and api_keys.digest(first) not in repr(info)
    assert {t.name for t in tenants.list_tenants()} == {"acme", "other"}

    revoked = tenants.revoke_key(api_keys.key_id(first), tenant="acme")
    assert (revoked.tenant, revoked.keys_left) == ("acme", 1)
    assert tenants.tenant_for(first) is None
    assert tenants.revoke_key(second).keys_left == 0
    with pytest.raises(tenants.TenantError):
        tenants.revoke_key(second)
    with pytest.raises(tenants.TenantError):
        tenants.revoke_key("0123456789ab")  # a key id needs its tenant


def test_revoked_keys_stop_working_with_the_reread_after_the_cache_time(aws, monkeypatch):
    environment.change(api_key_cache_seconds=0)
    key = tenants.create_key("acme")
    assert tenants.tenant_for(key) == "acme"
    tenants.revoke_key(key)
    assert tenants.tenant_for(key) == "acme"  # answered from the cache; the re-read starts in the background
    tenants._lookup.refresher.wait()
    assert tenants.tenant_for(key) is None


def _known_key_past_its_cache_time(tenant: str) -> tuple[str, str]:
    """A key this instance has looked up, whose cache time has run out; (key, digest)."""
    key = tenants.create_key(tenant)
    assert tenants.tenant_for(key) == tenant
    digest = api_keys.digest(key)
    tenants._lookup.known[digest] = tenants._lookup.known[digest]._replace(fresh_until=time.monotonic() - 1)
    return key, digest


def test_a_request_never_waits_for_a_known_keys_reread(aws, monkeypatch):
    key, digest = _known_key_past_its_cache_time("acme")
    real_client = tenant_items.client
    reads = []
    released, answered = threading.Event(), threading.Event()

    class Slow:
        def get_item(self, **kwargs):
            reads.append(kwargs)
            released.wait(30)  # a store answering slowly, e.g. botocore retrying a throttled read
            answered.set()
            return real_client("dynamodb").get_item(**kwargs)

    monkeypatch.setattr(tenant_items, "client", lambda _service: Slow())
    for _ in range(20):
        assert tenants.tenant_for(key) == "acme"
    assert not answered.is_set()  # all twenty answered while the re-read was still waiting on the store
    released.set()
    tenants._lookup.refresher.wait()
    assert len(reads) == 1  # one re-read for the twenty requests
    assert tenants._lookup.known[digest].fresh_until > time.monotonic()


def test_tenants_are_created_once_with_valid_names(aws):
    tenants.create_tenant("acme")
    with pytest.raises(tenants.TenantError, match="exists"):
        tenants.create_tenant("acme")
    for bad in ("", "-x", "a#b", "x" * 65, "with space"):
        with pytest.raises(tenants.TenantError, match="invalid tenant name"):
            tenants.create_tenant(bad)


def test_operator_keys_share_the_format_and_the_flood_proof_lookup(aws, monkeypatch):
    operator_key = operators.create_key("tests")
    assert operator_key.startswith("co_")
    assert api_keys.is_well_formed(operator_key, operators.KEY_PREFIX)
    assert operators.is_operator(operator_key)
    assert not operators.is_operator(api_keys.mint())  # a tenant's key never opens operator routes
    monkeypatch.setattr(operators._lookup, "unknown_limit", 20)
    for _ in range(100):
        assert not operators.is_operator(api_keys.mint(operators.KEY_PREFIX))
    assert len(operators._lookup.unknown) == 20

    def no_io(*_args, **_kwargs):
        raise AssertionError("the store was read")

    monkeypatch.setattr(tenant_items, "client", no_io)
    assert operators.is_operator(operator_key)  # still cached: the flood did not evict it
    assert not operators.is_operator(operator_key[:-1] + ("x" if operator_key[-1] != "x" else "y"))


def test_a_known_key_outlives_its_cache_time_while_the_store_fails(aws, monkeypatch):
    from botocore.exceptions import EndpointConnectionError

    real, digest = _known_key_past_its_cache_time("acme")

    def store_down(*_args, **_kwargs):
        raise EndpointConnectionError(endpoint_url="http://dynamodb")

    monkeypatch.setattr(tenant_items, "client", lambda _service: type("Down", (), {"get_item": store_down})())
    assert tenants.tenant_for(real) == "acme"  # served from the stale entry, not a 503
    tenants._lookup.refresher.wait()
    assert tenants.tenant_for(real) == "acme"  # the failed re-read changed nothing
    with pytest.raises(EndpointConnectionError):
        tenants.tenant_for(api_keys.mint())  # a key never seen is not guessed at
    stale = tenants._lookup.known[digest]
    tenants._lookup.known[digest] = stale._replace(stale_until=time.monotonic() - 1)  # STALE_KNOWN_SECONDS later
    with pytest.raises(EndpointConnectionError):
        tenants.tenant_for(real)  # stale beyond the bound: the outage shows
