// murmur-peer: one training peer. Launch N of them with murmur-run (or srun,
// or mpirun); each reads its rank from its flags or its launcher's
// environment (include/murmur/peer.h says which variables, in which order).
//
//   murmur-run -np 8 -- murmur-peer --algorithm choco --compress topk:0.01
//       --topology exponential --model mlp --epochs 5   (one command line)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gossip/algorithm/gossip_flags.h"
#include "peer/events/peer_events.h"
#include "peer/model/blas_threads.h"
#include "peer/train/trainer.h"

namespace {

using murmur::peer::train::TrainOptions;

// The flags of the model, data and optimizer.
void add_training_flags(CLI::App& app, TrainOptions& o, int& blas_threads) {
  const auto* training = "Training";
  app.add_option("--model", o.model, "mlp, mlp:H1,H2,..., cnn or logreg")->capture_default_str()->group(training);
  app.add_option("--device", o.device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str()
      ->group(training);
  app.add_option("--data-dir", o.data_dir,
                 "Fashion-MNIST IDX .gz files (default: $MURMUR_DATA_DIR, else /usr/share/datasets/fashion-mnist)")
      ->group(training);
  app.add_option("--partition", o.partition, "iid or dirichlet:<alpha>")->capture_default_str()->group(training);
  app.add_option("--train-examples", o.train_examples, "cap each peer's shard (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(training);
  app.add_option("--epochs", o.epochs)->check(CLI::Range(1, 100000))->capture_default_str()->group(training);
  app.add_option("--batch", o.batch, "examples per step per peer")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str()
      ->group(training);
  app.add_option("--lr", o.lr, "peak learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(training);
  app.add_option("--momentum", o.momentum)->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(training);
  app.add_option("--weight-decay", o.weight_decay)
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(training);
  app.add_flag("--nesterov", o.nesterov, "Nesterov momentum")->group(training);
  app.add_option("--warmup-epochs", o.warmup_epochs, "linear learning-rate warm-up")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(training);
  app.add_option("--lr-decay", o.lr_decay, "learning-rate decay after warm-up (docs/models.md)")
      ->capture_default_str()
      ->group(training);
  app.add_option("--seed", o.seed, "model initialisation and shuffling")->capture_default_str()->group(training);
  app.add_option("--extra-compute-ms", o.extra_compute_ms,
                 "sleep this long per step, as an accelerator's compute would take with the CPU idle "
                 "(scheduler experiments on CPU hosts)")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str()
      ->group(training);
  app.add_flag("--layerwise-update", o.layerwise_update,
               "gradient-averaging algorithms: update each layer just before the next forward pass runs it, as "
               "soon as its mean is in (bytescheduler-* finish front layers first), instead of the whole model "
               "after the round")
      ->group(training);
  app.add_option("--blas-threads", blas_threads, "BLAS threads (0: $MURMUR_BLAS_THREADS, else 1)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(training);
}

// Where metrics and checkpoints go.
void add_output_flags(CLI::App& app, TrainOptions& o) {
  const auto* output = "Output";
  app.add_option("--metrics", o.metrics, "JSON-lines metrics file; {rank} becomes the rank")->group(output);
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "write rank-N.ckpt after every epoch")->group(output);
  app.add_flag("--resume", o.resume, "start from the checkpoints in --checkpoint-dir")->group(output);
  // A planned stop (a maintenance window, a preempted allocation): the
  // learning-rate schedule stays the one of --epochs, so that --resume
  // continues the same run.
  app.add_option("--stop-after-epoch", o.stop_after_epoch,
                 "end the run after this epoch's checkpoint (the schedule stays --epochs'); --resume continues it")
      ->check(CLI::Range(1, 100000))
      ->needs(app.get_option("--checkpoint-dir"))
      ->group(output);
  app.add_option("--trace", o.peer.trace,
                 "write this peer's timeline here as Chrome trace-event JSON ({rank} becomes the rank; "
                 "$MURMUR_TRACE; docs/trace.md)")
      ->group(output);
  app.add_option("--log-every", o.log_every, "steps between step metrics and progress events")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str()
      ->group(output);
  app.add_option("--evals-per-epoch", o.evals_per_epoch, "test-set evaluations per epoch (time-to-accuracy curves)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str()
      ->group(output);
}

// Which job this peer belongs to, and how it reaches the others.
void add_job_flags(CLI::App& app, murmur::PeerConfig& p) {
  const auto* job = "Job (default: from murmur-run, Slurm or Open MPI)";
  app.add_option("--rank", p.rank, "this peer's rank")->group(job);
  app.add_option("--world-size", p.world_size, "number of peers")->group(job);
  app.add_option("--rendezvous", p.rendezvous, "rendezvous host:port ($MURMUR_RENDEZVOUS)")->group(job);
  app.add_flag("--host-rendezvous", p.host_rendezvous, "rank 0 serves the rendezvous at --rendezvous")->group(job);
  app.add_option("--token", p.token, "cluster token ($MURMUR_TOKEN)")->group(job);
  app.add_option("--link-profile", p.link_profile, "emulated links, e.g. 10gbe ($MURMUR_LINK_PROFILE)")->group(job);
  app.add_option("--backend", p.backend, "libfabric or asio")
      ->check(CLI::IsMember({"libfabric", "asio"}))
      ->capture_default_str()
      ->group(job);
  app.add_option("--provider", p.provider,
                 "libfabric provider: auto, tcp, shm, verbs, net (opt-in native tcp: docs/fabric-performance.md), "
                 "or shm+tcp, shm+net, shm+verbs (shm to peers on this machine, the other between machines)")
      ->check(CLI::IsMember({"auto", "tcp", "shm", "verbs", "net", "shm+tcp", "shm+net", "shm+verbs"}))
      ->capture_default_str()
      ->group(job);
  app.add_option("--interface", p.interface,
                 "bind the data plane to this interface (ib0) or subnet (10.0.0.0/24) ($MURMUR_INTERFACE)")
      ->group(job);
  app.add_option("--timeout", p.timeout_s, "the most seconds a silent peer is waited for (the deadline's ceiling)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(job);
  const std::string failures = "Failures (docs/resilience.md)";
  app.add_flag("!--no-survive", p.survive_lost_peers,
               "stop at the first lost peer instead of going on without it in a new membership view")
      ->group(failures);
  app.add_option("--lost-peer-floor", p.lost_peer_floor_s,
                 "seconds: the least a silent peer is waited for before it is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(failures);
  app.add_option("--lost-peer-multiplier", p.lost_peer_multiplier,
                 "a silent peer is reported after this many times the 99th percentile of recent waits")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str()
      ->group(failures);
}

}  // namespace

int main(int argc, char** argv) {
  // The job outlives murmur-run (issue 18): if murmur-run dies, writes to
  // its pipes fail with EPIPE instead of killing this peer. The disposition
  // is process-wide, so a socket whose other end is gone cannot raise it
  // either (Asio sends with MSG_NOSIGNAL anyway).
  murmur::peer::events::ignore_sigpipe();
  TrainOptions o;
  auto& p = o.peer;
  int blas_threads = 0;
  CLI::App app{"murmur-peer: one peer of a murmur training job (docs/training.md)"};
  app.get_formatter()->column_width(34);

  murmur::gossip::add_gossip_flags(app, p);  // PeerConfig is a GossipOptions
  add_training_flags(app, o, blas_threads);
  add_output_flags(app, o);
  add_job_flags(app, p);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, so that murmur-run's "last stderr line" is the reason.
    std::fprintf(stderr, "murmur-peer: %s (murmur-peer --help lists the flags)\n", e.what());
    return 2;
  }

  murmur::peer::model::set_blas_threads(blas_threads > 0 ? blas_threads
                                                         : murmur::peer::model::blas_threads_from_environment());
  try {
    murmur::peer::train::train(o);
    return 0;
  } catch (const std::exception& e) {
    const char* rank = std::getenv("MURMUR_RANK");
    std::fprintf(stderr, "murmur-peer%s%s: %s\n", p.rank >= 0 || rank ? " rank " : "",
                 p.rank >= 0 ? std::to_string(p.rank).c_str() : (rank ? rank : ""), e.what());
    return 1;
  }
}
