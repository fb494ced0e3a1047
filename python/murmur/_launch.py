"""Which rank this process is, and where the job's rendezvous is.

murmur's C++ Peer reads murmur-run's, Slurm's and Open MPI's variables
itself (src/peer/api/job_environment.cc); what Python adds is torchrun's,
which the C++ side does not know. The order, first match wins:

1. explicit arguments to ``murmur.init()`` (``rank`` and ``world_size``),
2. murmur-run: ``MURMUR_RANK``/``MURMUR_WORLD_SIZE``,
3. torchrun: ``RANK``/``WORLD_SIZE`` (with ``LOCAL_RANK``, ``MASTER_ADDR``,
   ``MASTER_PORT``),
4. Slurm's srun: ``SLURM_PROCID``/``SLURM_NTASKS``,
5. Open MPI's mpirun: ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE``,
6. none: a job of one.

torchrun comes before Slurm and Open MPI because ``srun torchrun ...`` sets
both, and then torchrun's worker rank is the one that counts.

Under torchrun nobody serves a murmur rendezvous, so rank 0 serves one
itself at ``MASTER_ADDR`` and port ``MASTER_PORT + 1`` (torchrun's own store
has ``MASTER_PORT``), unless ``MURMUR_RENDEZVOUS`` says otherwise.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Mapping, Optional


@dataclasses.dataclass(frozen=True)
class Launch:
    """What ``resolve_launch`` found. ``rank``/``world_size`` of None leave
    them to the C++ Peer (murmur-run, Slurm, Open MPI, or a job of one)."""

    source: str
    rank: Optional[int] = None
    world_size: Optional[int] = None
    local_rank: int = 0
    rendezvous: str = ""
    host_rendezvous: bool = False
    token: str = ""


def _int(env: Mapping[str, str], name: str) -> int:
    text = env[name]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}='{text}' is not an integer") from None


def _pair(env: Mapping[str, str], rank: str, size: str) -> Optional[tuple]:
    if rank not in env and size not in env:
        return None
    if rank not in env or size not in env:
        present, absent = (rank, size) if rank in env else (size, rank)
        raise ValueError(f"{present} is set but {absent} is not")
    return _int(env, rank), _int(env, size)


def resolve_launch(
    env: Optional[Mapping[str, str]] = None,
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
) -> Launch:
    """The launch this process is part of, from explicit arguments first and
    the environment (``os.environ`` unless ``env``) after them.

    Raises ValueError naming the variable: a rank or size that is not a
    number, only one of a pair, or a ``MASTER_PORT`` out of range.
    """
    env = os.environ if env is None else env
    local_rank = _int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else 0
    if rank is not None or world_size is not None:
        if rank is None or world_size is None:
            raise ValueError(f"murmur.init(): rank ({rank}) and world_size ({world_size}) must be given together")
        return Launch("arguments", rank, world_size, local_rank)
    if "MURMUR_RANK" in env or "MURMUR_WORLD_SIZE" in env:
        local = _int(env, "MURMUR_LOCAL_RANK") if "MURMUR_LOCAL_RANK" in env else local_rank
        return Launch("murmur-run", local_rank=local)
    torchrun = _pair(env, "RANK", "WORLD_SIZE")
    if torchrun is not None:
        return _torchrun(env, torchrun[0], torchrun[1], local_rank)
    if "SLURM_PROCID" in env:
        local = _int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0
        return Launch("slurm", local_rank=local)
    if "OMPI_COMM_WORLD_RANK" in env:
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") if "OMPI_COMM_WORLD_LOCAL_RANK" in env else 0
        return Launch("mpirun", local_rank=local)
    return Launch("none")


def _torchrun(env: Mapping[str, str], rank: int, world_size: int, local_rank: int) -> Launch:
    rendezvous = env.get("MURMUR_RENDEZVOUS", "")
    host_rendezvous = False
    if not rendezvous and world_size > 1:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if name not in env:
                raise ValueError(f"RANK and WORLD_SIZE are set (torchrun) but {name} is not; "
                                 "set MURMUR_RENDEZVOUS=host:port or launch with torchrun/murmur-run")
        port = _int(env, "MASTER_PORT") + 1
        if not 1 <= port <= 65535:
            raise ValueError(f"MASTER_PORT='{env['MASTER_PORT']}': murmur's rendezvous port {port} is out of range")
        rendezvous = f"{env['MASTER_ADDR']}:{port}"
        host_rendezvous = rank == 0
    # A token keeps a stray peer of another job at the same address out;
    # every worker of one torchrun job sees the same run id and port.
    token = env.get("MURMUR_TOKEN") or f"torchrun-{env.get('TORCHELASTIC_RUN_ID', 'none')}-{env.get('MASTER_PORT', '')}"
    return Launch("torchrun", rank, world_size, local_rank, rendezvous, host_rendezvous, token)
