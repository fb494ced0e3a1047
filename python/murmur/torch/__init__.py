"""murmur for PyTorch: a gossip optimizer wrapper, a rank-sharding sampler
and model averaging (docs/python.md)."""

from .average import average_model
from .optimizer import GossipOptimizer
from .sampler import ShardSampler

__all__ = ["GossipOptimizer", "ShardSampler", "average_model"]
