// What a resume may take from a checkpoint, decided before anything is
// loaded: the checkpoint against the run that starts (docs/resilience.md,
// "Checkpoints"). Pure; the trainer applies the plan.
//
//   refused (CheckpointError naming the path and both sides):
//     another rank, world size, model or parameter count: the shard, the
//       neighbours and the rank numbering belong to another job;
//     another gossip algorithm (version 2): its state means nothing to this
//       one, and dropping it silently would hide a wrong flag.
//   resumed, the algorithm's state restarting: a version 1 file.
//   resumed onto the present view: saved under other members. Parameters,
//     momentum and the data position carry over; the algorithm's state loads
//     with load_state_from_other_view (what depends on neighbours is
//     re-derived); the scheduler's (per peer) restarts.
//   resumed whole: the same members (the generation may differ: a job
//     restarted whole starts again at generation 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "peer/train/checkpoint.h"

namespace murmur::peer::train {

struct ResumeTarget {
  int rank = 0;
  int world_size = 1;
  std::string model;
  std::size_t parameters = 0;
  std::string algorithm;
  std::uint64_t view_generation = 0;
  std::vector<int> view_members;
};

struct ResumePlan {
  bool algorithm_state = false;  // load the algorithm's state
  bool other_view = false;       // ... with load_state_from_other_view
  bool schedule_state = false;   // load the scheduler's state (when the run has a scheduler)
  std::string note;              // one log line saying what carries over and what restarts
};

ResumePlan plan_resume(const Checkpoint& checkpoint, const std::string& path, const ResumeTarget& now);

}  // namespace murmur::peer::train
