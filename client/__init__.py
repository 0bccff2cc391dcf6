"""The corral Python SDK.

    from corral_client import Corral          # installed with `pip install ./client`
    corral = Corral(api_url, api_key)
    job_id = corral.enqueue("echo", {"hello": "world"})
    job = corral.wait(job_id)

Inside the corral repository this folder is imported as `client` (tests, CLI, benchmark).
Every error is a `CorralError` (`status`, `code`, `field`); see `errors`.
"""

# Each module lists its public names in its own `__all__`; the package is their union (written with `+=`,
# the form type checkers follow).
from . import corral, durable, errors, retrying, signatures, triggers, types
from .corral import *  # noqa: F403
from .durable import *  # noqa: F403
from .errors import *  # noqa: F403
from .retrying import *  # noqa: F403
from .signatures import *  # noqa: F403  (HTTP jobs' receivers)
from .triggers import *  # noqa: F403
from .types import *  # noqa: F403

__all__: list[str] = []
__all__ += corral.__all__
__all__ += durable.__all__
__all__ += errors.__all__
__all__ += retrying.__all__
__all__ += signatures.__all__
__all__ += triggers.__all__
__all__ += types.__all__
