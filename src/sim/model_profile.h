// ModelProfile: what murmur-sim needs to know of a DNN to time one training
// iteration on one GPU: its tensors in forward order, each with a parameter
// count and its share of forward and backward time, and the single-GPU
// throughput the times are scaled to.
//
// Built-in profiles (resnet50, bert-base, bert-large) come from the models'
// public architectures (tensor shapes) and the seed paper's setup (batch,
// single-GPU samples/s, docs/seed-paper.md).
// Users add their own from a text file (format in docs/sim-files.md); a
// malformed file is refused with a ProfileError naming path:line and the reason.
//
// Times: a layer's forward_s and backward_s are seconds for one batch on one
// GPU; the sum over layers of forward_s + backward_s equals batch /
// single_gpu_samples_per_s. Backward visits layers in reverse order, and a
// layer's gradient is ready when its backward time has elapsed (WFBP).
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/line_reader.h"

namespace murmur::sim {

struct LayerProfile {
  std::string name;
  std::int64_t parameters = 0;  // elements of the layer's gradient tensor(s)
  double forward_s = 0;
  double backward_s = 0;
};

struct ModelProfile {
  std::string name;
  int batch = 0;  // per GPU
  double single_gpu_samples_per_s = 0;
  int bytes_per_parameter = 4;       // fp32 gradients
  std::vector<LayerProfile> layers;  // forward order

  std::int64_t parameters() const;
  double iteration_s() const;  // forward + backward, one GPU
  double gradient_bytes() const { return static_cast<double>(parameters()) * bytes_per_parameter; }
};

class ProfileError : public ParseError {
 public:
  // A fault that is not in a file (a generator's parameters, a flag): the
  // message is `message` alone.
  explicit ProfileError(const std::string& message) : ParseError("", 0, message) {}
  // A fault at path:line (line 0: the file as a whole).
  ProfileError(const std::string& path, int line, const std::string& reason) : ParseError(path, line, reason) {}
};

// Names of the built-in profiles, in a stable order.
const std::vector<std::string>& builtin_profile_names();
// Throws ProfileError (listing the known names) for an unknown name.
ModelProfile builtin_profile(const std::string& name);
// Parses a profile file; throws ProfileError "path:line: reason".
ModelProfile load_profile_file(const std::string& path);
// A built-in name, or a path to a profile file.
ModelProfile resolve_profile(const std::string& name_or_path);

// Sets the times of profile.layers from their forward FLOPs (one entry per
// layer, > 0 in all): forward time proportional to FLOPs, backward twice the
// forward, then all scaled so iteration_s() equals batch /
// single_gpu_samples_per_s. The built-in profiles and files with flops= use it.
void set_times_from_flops(ModelProfile& profile, const std::vector<double>& forward_flops);

}  // namespace murmur::sim
