"""murmur under a real Slurm: a one-node cluster that scripts/slurm-local.sh
starts on this machine (slurmctld, slurmd and munged of its own, other ports
and sockets than any system Slurm). The peers take rank, size and the
rendezvous from Slurm's variables alone: no murmur-run, no MURMUR_*.

Each job asserts what the peers report (accuracy, agreement of the averaged
model), not only exit codes."""

import fcntl
import json
import os
import shutil
import subprocess

import pytest

from conftest import EXAMPLE, REPO, result_events

DATA = os.environ.get("MURMUR_DATA_DIR") or "/usr/share/datasets/fashion-mnist"
SLURM_LOCAL = os.path.join(REPO, "scripts", "slurm-local.sh")
SLURM_DIR = os.environ.get("MURMUR_SLURM_DIR", "/tmp/murmur-slurm")
PYTHON = "/usr/bin/python3"
PEER_ARGS = ["--epochs", "2", "--train-examples", "2000", "--log-every", "1000"]

pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")),
                       reason=f"no Fashion-MNIST in {DATA} (Debian's dataset-fashion-mnist)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="starting slurmd needs root (scripts/slurm-local.sh)"),
    pytest.mark.skipif(shutil.which("slurmd") is None or shutil.which("srun") is None,
                       reason="no Slurm (scripts/setup.sh installs slurmctld, slurmd, slurm-client, munge)"),
]


@pytest.fixture(scope="module")
def slurm_env():
    """The environment srun and sbatch need; stops the daemons afterwards
    when this module started them. Holds a lock on SLURM_DIR meanwhile:
    the one-node cluster is the machine's, and two test runs at once (two
    clones) shared it, the first stopping the daemons under the second's
    jobs, which then waited out ctest's timeout (3 December)."""
    lock = open(SLURM_DIR + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    env = dict(os.environ, MURMUR_SLURM_DIR=SLURM_DIR, MURMUR_LOG_LEVEL="warn", OMP_NUM_THREADS="1")
    for name in [n for n in env if n.startswith(("SLURM_", "MURMUR_RANK", "MURMUR_WORLD", "MURMUR_RENDEZVOUS"))]:
        del env[name]  # this test may itself run under Slurm or murmur-run
    was_running = os.path.exists(os.path.join(SLURM_DIR, "slurmd.pid"))
    proc = subprocess.run([SLURM_LOCAL, "start"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    env["SLURM_CONF"] = os.path.join(SLURM_DIR, "slurm.conf")
    yield env
    if not was_running:
        subprocess.run([SLURM_LOCAL, "stop"], env=env, timeout=60)
    lock.close()


def test_srun_starts_4_murmur_peers_that_find_each_other(slurm_env, build_dir):
    peer = os.path.join(build_dir, "src", "peer", "train", "murmur-peer")
    proc = subprocess.run(["srun", "-n", "4", "--resv-ports=1", "--time=5", peer, "--algorithm", "choco",
                           "--compress", "topk:0.1", "--topology", "ring", *PEER_ARGS],
                          env=slurm_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = result_events(proc.stdout)
    assert sorted(results) == [0, 1, 2, 3], proc.stdout[-4000:]
    averaged = {round(r["average_model_test_accuracy"], 6) for r in results.values()}
    assert len(averaged) == 1, results  # one averaged model, evaluated by all
    assert averaged.pop() > 0.70, results
    assert all(r["bytes_sent"] > 0 for r in results.values()), results


def test_a_derived_port_without_resv_ports(slurm_env, build_dir):
    """No --resv-ports: rank 0 serves at a port from the job and step ids."""
    peer = os.path.join(build_dir, "src", "peer", "train", "murmur-peer")
    proc = subprocess.run(["srun", "-n", "2", "--time=5", peer, "--algorithm", "allreduce", *PEER_ARGS],
                          env=slurm_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = result_events(proc.stdout)
    assert sorted(results) == [0, 1], proc.stdout[-4000:]
    assert results[0]["average_model_test_accuracy"] == results[1]["average_model_test_accuracy"]


def test_sbatch_runs_the_pytorch_example(slurm_env, tmp_path, build_dir):
    """The batch script of docs/launching.md's pattern, with the PyTorch
    example: srun inside sbatch, the Python package finding its job from
    Slurm's variables."""
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --ntasks=4\n#SBATCH --time=5\n"
                      f"srun --resv-ports=1 {PYTHON} {EXAMPLE} --algorithm dpsgd --epochs 2 "
                      "--train-examples 8000 --test-examples 2000 --batch-size 32\n")
    out = tmp_path / "job.out"
    env = dict(slurm_env, PYTHONPATH=os.path.join(build_dir, "python"))
    proc = subprocess.run(["sbatch", "--wait", "--output", str(out), str(script)], env=env, cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    text = out.read_text() if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + text[-4000:]
    lines = [line[line.index("{"):] for line in text.splitlines() if '"averaged_accuracy"' in line]
    assert len(lines) == 1, text[-4000:]
    result = json.loads(lines[0])
    assert result["launcher"] == "slurm" and result["ranks"] == 4, text[-4000:]
    assert result["averaged_accuracy"] > 0.75, text[-4000:]
    assert result["consensus_distance"] < 1.0, text[-4000:]


def test_the_example_batch_script_of_the_docs(slurm_env, tmp_path, build_dir):
    """examples/slurm/train_mlp.sbatch as docs/launching.md runs it, with a
    shorter job: 8 tasks, every rank reports the same averaged model."""
    script = os.path.join(REPO, "examples", "slurm", "train_mlp.sbatch")
    out = tmp_path / "job.out"
    env = dict(slurm_env, MURMUR_BUILD=build_dir)
    proc = subprocess.run(["sbatch", "--wait", "--output", str(out), script, "--algorithm", "choco", "--compress",
                           "topk:0.01", "--topology", "exponential", *PEER_ARGS],
                          env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    text = out.read_text() if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + text[-4000:]
    results = result_events(text)
    assert sorted(results) == list(range(8)), text[-4000:]
    averaged = {r["average_model_test_accuracy"] for r in results.values()}
    assert len(averaged) == 1 and averaged.pop() > 0.70, results
