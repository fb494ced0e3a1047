// Checkpoints of one training peer: its parameters, its optimizer's momentum,
// where it was (epoch, step, the data order's position), the gossip
// algorithm's and the scheduler's own state and the membership view, so that
// a job resumes where it stopped (docs/resilience.md, "Checkpoints").
//
// File format (little-endian; docs/training.md):
//   "MURMURCK" | u32 version (2) | u32 header bytes | header (JSON: rank,
//   world_size, model, parameters, epoch, step, momentum, algorithm,
//   data_pass, data_position, view_generation, view_members) |
//   parameters f32[n] | momentum f32[n] | u64 bytes + algorithm state |
//   u64 bytes + scheduler state | u32 CRC-32 of everything before it
// The two states are opaque blobs (gossip/algorithm/state_blob.h) that
// their owners check when loading. Version 1 files (no fields after
// momentum, and none of the header's from `algorithm` on) still load, with
// `version` 1 and those fields empty.
//
// save_checkpoint writes a temporary file beside the target, fsyncs it and
// renames it over the target (then fsyncs the directory): a crash leaves
// either the old checkpoint or the new one, never half of one.
// load_checkpoint checks every field against the file's size before reading
// it. Both throw CheckpointError naming the path and what is wrong.
// Blocking: file I/O. Thread safety: distinct paths from distinct threads.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace murmur::peer::train {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Checkpoint {
  int rank = 0;
  int world_size = 1;
  std::string model;      // the model spec, e.g. "mlp" or "cnn"
  int epoch = 0;          // epochs completed
  std::int64_t step = 0;  // optimizer steps completed
  std::vector<float> parameters;
  std::vector<float> momentum;  // empty or parameters.size()
  // Version 2 (empty / 0 in a version 1 file):
  int version = 2;                    // of the file loaded; save_checkpoint always writes 2
  std::string algorithm;              // the gossip algorithm whose state follows
  std::string algorithm_state;        // Algorithm::save_state (may be empty: no state)
  std::string schedule_state;         // ScheduleController::save_state (empty: no adaptive schedule)
  int data_pass = 0;                  // Batcher: the shard's pass (start_epoch argument)...
  std::uint64_t data_position = 0;    // ...and the examples of it already taken
  std::uint64_t view_generation = 0;  // the membership view it was saved in...
  std::vector<int> view_members;      // ...and its members (empty in version 1)
};

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
Checkpoint load_checkpoint(const std::string& path);

// "<dir>/rank-<rank>.ckpt"
std::string checkpoint_path(const std::string& dir, int rank);

}  // namespace murmur::peer::train
