"""murmur: decentralized training by gossip of compressed models.

    import murmur
    peer = murmur.init(algorithm="choco", compress="topk:0.01")

For PyTorch, ``murmur.torch.GossipOptimizer`` wraps any optimizer. See
docs/python.md for launchers, the API and what is measured.
"""

import atexit

from . import _signals

_signals.keep_handlers_across_load()
from ._launch import Launch, resolve_launch  # noqa: E402 (after the line above: the C++ runtime loads here)
from ._murmur import Departure, LinkStats, PeerStats, PeerView, partition  # noqa: E402
from ._peer import Peer, _close_default, init, peer  # noqa: E402

_signals.reinstall_python_handlers()

__all__ = ["Departure", "Launch", "LinkStats", "Peer", "PeerStats", "PeerView", "init", "partition", "peer",
           "resolve_launch"]
__version__ = "0.1.0"

# A Peer left open at exit leaves the job before the interpreter tears down
# the modules its C++ destructor would otherwise run among.
atexit.register(_close_default)
