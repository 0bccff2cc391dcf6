"""The one pager every listing uses (as Stripe's `ListObject.auto_paging_iter`): pages follow `next_cursor`,
items follow the pages, and nothing is fetched before it is wanted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any, TypeVar

Page = TypeVar("Page")
Item = TypeVar("Item")


def pages(
    call: Callable[..., Any], path: str, query: dict[str, Any], cursor: str | None, page: Callable[[Any], Page]
) -> Iterator[Page]:
    """GET `path` with `query` (None values left out) through `call` (`Corral.call`), then again with each
    answer's `next_cursor` until an answer has none; `page` reads an answer into its page."""
    params = {name: value for name, value in query.items() if value is not None}
    while True:
        answer = call("GET", path, idempotent=True, params={**params, "cursor": cursor} if cursor else params)
        yield page(answer)
        cursor = answer.get("next_cursor")
        if not cursor:
            return


def items(pages: Iterator[Page], of: Callable[[Page], list[Item]], max_items: int | None) -> Iterator[Item]:
    """The pages' items in order, or the first `max_items`, without asking for a page beyond them."""
    every = (item for each in pages for item in of(each))
    return every if max_items is None else islice(every, max(max_items, 0))


__all__: list[str] = []  # used by `Corral`, `Schedules` and `Batches`; their `pages()` and `list()` are the API
