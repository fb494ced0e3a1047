// The names in murmur-peer's metrics file (--metrics, JSON lines): the
// values of the "event" key and the keys of the records. docs/training.md
// says which event carries which key and what each holds; bench/common.py
// spells the same names (Event, Key) for the bench scripts, and
// bench/common_test.py checks that the two agree.
//
// Declarations only; `inline constexpr char[]` so that they go into
// nlohmann::json initializer lists as they are.
#pragma once

namespace murmur::peer::train::metric {

namespace event {
inline constexpr char kStart[] = "start";
inline constexpr char kStep[] = "step";
inline constexpr char kEval[] = "eval";
inline constexpr char kEpoch[] = "epoch";
// Written by the latency-aware scheduler (gossip/schedule/decision_record.h);
// the trainer adds kTime.
inline constexpr char kSchedule[] = "schedule";
inline constexpr char kSummary[] = "summary";
// A membership view the gossip adopted (docs/resilience.md).
inline constexpr char kView[] = "view";
// This rank's data re-partitioned over a new view at an epoch boundary.
inline constexpr char kRepartition[] = "repartition";
}  // namespace event

namespace key {
inline constexpr char kEvent[] = "event";

// start
inline constexpr char kRank[] = "rank";
inline constexpr char kWorldSize[] = "world_size";
inline constexpr char kModel[] = "model";
inline constexpr char kSchedule[] = "schedule";
inline constexpr char kParameters[] = "parameters";
inline constexpr char kAlgorithm[] = "algorithm";
inline constexpr char kCompressor[] = "compressor";
inline constexpr char kTopology[] = "topology";
inline constexpr char kPeriod[] = "period";
inline constexpr char kPartition[] = "partition";
inline constexpr char kShardExamples[] = "shard_examples";
inline constexpr char kStepsPerEpoch[] = "steps_per_epoch";
inline constexpr char kEpochs[] = "epochs";
inline constexpr char kBatch[] = "batch";
inline constexpr char kPid[] = "pid";  // the peer's process (fault injection: bench/resilience)

// step, eval, epoch (and kTime in schedule)
inline constexpr char kTime[] = "time";
inline constexpr char kEvalSeconds[] = "eval_seconds";
inline constexpr char kTrainSeconds[] = "train_seconds";
inline constexpr char kEpoch[] = "epoch";
inline constexpr char kStep[] = "step";
inline constexpr char kLoss[] = "loss";
inline constexpr char kTrainAccuracy[] = "train_accuracy";
inline constexpr char kLr[] = "lr";
inline constexpr char kTestAccuracy[] = "test_accuracy";
inline constexpr char kTestLoss[] = "test_loss";
inline constexpr char kBytesSent[] = "bytes_sent";
inline constexpr char kBytesReceived[] = "bytes_received";
inline constexpr char kComputeSeconds[] = "compute_seconds";
inline constexpr char kCommunicationWaitSeconds[] = "communication_wait_seconds";
inline constexpr char kCommunicationThreadSeconds[] = "communication_thread_seconds";
// Its CPU time in rounds: the rounds' own work; the rest of
// communication_thread_seconds waited (for neighbours' messages, a core).
inline constexpr char kCommunicationThreadCpuSeconds[] = "communication_thread_cpu_seconds";
// Gradient methods: communication-thread seconds that ran while the trainer
// still computed (its backward pass), out of communication_thread_seconds.
inline constexpr char kCommunicationOverlapSeconds[] = "communication_overlap_seconds";
inline constexpr char kRounds[] = "rounds";
inline constexpr char kRatio[] = "ratio";
inline constexpr char kConsensusDistance[] = "consensus_distance";
inline constexpr char kLinks[] = "links";  // by neighbour rank: kHost, kBytesSent, kBytesReceived
inline constexpr char kHost[] = "host";

// summary: the result event murmur-run receives (launcher::ResultEvent
// writes rank, test_accuracy, average_model_test_accuracy, bytes_sent,
// bytes_received and wall_seconds under these names), plus the keys below
// and the run's settings from start.
inline constexpr char kAverageModelTestAccuracy[] = "average_model_test_accuracy";
inline constexpr char kWallSeconds[] = "wall_seconds";
inline constexpr char kPeakRssBytes[] = "peak_rss_bytes";
inline constexpr char kModelBufferBytes[] = "model_buffer_bytes";
inline constexpr char kDatasetBytes[] = "dataset_bytes";
inline constexpr char kSetupSeconds[] = "setup_seconds";
inline constexpr char kSteps[] = "steps";

// view (and kTime, kStep), repartition (kShardExamples, kStepsPerEpoch, kEpoch)
inline constexpr char kGeneration[] = "generation";
inline constexpr char kMembers[] = "members";  // ranks, ascending
inline constexpr char kLost[] = "lost";        // [{rank, host, reason}]
inline constexpr char kJoined[] = "joined";    // ranks
inline constexpr char kSpectralGap[] = "spectral_gap";
inline constexpr char kGraph[] = "graph";  // how the view's graph was built, one line
inline constexpr char kReason[] = "reason";
inline constexpr char kPosition[] = "position";   // this rank's place in the view (its shard)
inline constexpr char kUnixTime[] = "unix_time";  // wall clock, seconds since 1970 (across processes)
}  // namespace key

}  // namespace murmur::peer::train::metric
