// Checkpoints of one training peer: its parameters, its optimizer's momentum
// and where it was (epoch, step), so that a job can resume after a stop.
//
// File format (little-endian; docs/training.md):
//   "MURMURCK" | u32 version (1) | u32 header bytes | header (JSON: rank,
//   world_size, model, parameters, epoch, step) | parameters f32[n] |
//   momentum f32[n] | u32 CRC-32 of everything before it
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
};

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
Checkpoint load_checkpoint(const std::string& path);

// "<dir>/rank-<rank>.ckpt"
std::string checkpoint_path(const std::string& dir, int rank);

}  // namespace murmur::peer::train
