"""murmur.resolve_launch: which rank and rendezvous each launcher's
variables give (no Peer is started)."""

import pytest

from murmur import resolve_launch

TORCHRUN = {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "MASTER_ADDR": "nodeA", "MASTER_PORT": "29500",
            "TORCHELASTIC_RUN_ID": "abc"}


def test_no_launcher_is_a_job_of_one():
    launch = resolve_launch({})
    assert launch.source == "none" and launch.rank is None


def test_explicit_arguments_win():
    launch = resolve_launch(dict(TORCHRUN, MURMUR_RANK="1", MURMUR_WORLD_SIZE="2"), rank=3, world_size=8)
    assert (launch.source, launch.rank, launch.world_size) == ("arguments", 3, 8)


def test_explicit_rank_needs_world_size():
    with pytest.raises(ValueError, match="must be given together"):
        resolve_launch({}, rank=1)


def test_murmur_run_wins_over_torchrun_and_is_left_to_the_peer():
    launch = resolve_launch(dict(TORCHRUN, MURMUR_RANK="1", MURMUR_WORLD_SIZE="2", MURMUR_LOCAL_RANK="1"))
    assert (launch.source, launch.rank, launch.local_rank) == ("murmur-run", None, 1)


def test_torchrun_rank_0_serves_the_rendezvous_next_to_the_store():
    launch = resolve_launch(dict(TORCHRUN, RANK="0"))
    assert (launch.source, launch.rank, launch.world_size) == ("torchrun", 0, 4)
    assert launch.rendezvous == "nodeA:29501" and launch.host_rendezvous
    assert launch.token == "torchrun-abc-29500"


def test_torchrun_other_ranks_connect():
    launch = resolve_launch(TORCHRUN)
    assert (launch.rank, launch.local_rank, launch.host_rendezvous) == (2, 2, False)


def test_torchrun_with_murmur_rendezvous_hosts_nothing():
    launch = resolve_launch(dict(TORCHRUN, RANK="0", MURMUR_RENDEZVOUS="hostB:7000", MURMUR_TOKEN="T"))
    assert (launch.rendezvous, launch.host_rendezvous, launch.token) == ("hostB:7000", False, "T")


def test_torchrun_wins_over_slurm():
    launch = resolve_launch(dict(TORCHRUN, SLURM_PROCID="0", SLURM_NTASKS="1"))
    assert launch.source == "torchrun"


def test_torchrun_without_master_port_says_what_is_missing():
    env = dict(TORCHRUN)
    del env["MASTER_PORT"]
    with pytest.raises(ValueError, match="MASTER_PORT is not"):
        resolve_launch(env)


def test_half_a_pair_is_an_error():
    with pytest.raises(ValueError, match="RANK is set but WORLD_SIZE is not"):
        resolve_launch({"RANK": "1"})


def test_a_rank_that_is_not_a_number_is_named():
    with pytest.raises(ValueError, match="RANK='x' is not an integer"):
        resolve_launch(dict(TORCHRUN, RANK="x"))


def test_slurm_and_mpirun_are_left_to_the_peer_with_their_local_rank():
    slurm = resolve_launch({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"})
    assert (slurm.source, slurm.rank, slurm.local_rank) == ("slurm", None, 1)
    ompi = resolve_launch({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
                           "OMPI_COMM_WORLD_LOCAL_RANK": "3"})
    assert (ompi.source, ompi.local_rank) == ("mpirun", 3)
