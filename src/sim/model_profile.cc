// ModelProfile arithmetic, the profile file parser and resolve_profile. The
// file format, its rules and its error messages are in docs/sim-files.md.
#include "sim/model_profile.h"

#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/check.h"
#include "common/line_reader.h"

namespace murmur::sim {

std::int64_t ModelProfile::parameters() const {
  std::int64_t total = 0;
  for (const auto& layer : layers) total += layer.parameters;
  return total;
}

double ModelProfile::iteration_s() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.forward_s + layer.backward_s;
  return total;
}

namespace {

// Scales every layer's times by one factor so that the iteration takes
// exactly batch / samples-per-s: the shares between layers are kept.
void scale_to_throughput(ModelProfile& profile) {
  const double sum = profile.iteration_s();
  MURMUR_CHECK_GT(sum, 0.0);
  MURMUR_CHECK_GT(profile.single_gpu_samples_per_s, 0.0);
  const double factor = profile.batch / profile.single_gpu_samples_per_s / sum;
  for (auto& layer : profile.layers) {
    layer.forward_s *= factor;
    layer.backward_s *= factor;
  }
}

}  // namespace

void set_times_from_flops(ModelProfile& profile, const std::vector<double>& forward_flops) {
  MURMUR_CHECK_EQ(forward_flops.size(), profile.layers.size());
  for (std::size_t i = 0; i < forward_flops.size(); ++i) {
    MURMUR_CHECK_GT(forward_flops[i], 0.0);
    // Backward computes two products per forward one (the gradient with
    // respect to the input and to the weights), hence twice the time.
    profile.layers[i].forward_s = forward_flops[i];
    profile.layers[i].backward_s = 2 * forward_flops[i];
  }
  scale_to_throughput(profile);
}

namespace {

constexpr LineFormat kProfileFormat{.comment = '#', .raise = &raise_as<ProfileError>};

class ProfileParser {
 public:
  explicit ProfileParser(LineReader& reader) : reader_(reader) {}

  [[noreturn]] void fail(int line, const std::string& reason) const { reader_.fail(line, reason); }

  ModelProfile parse() {
    for (Line line; reader_.next(line);) parse_line(line.words(), line.number);
    return finish(reader_.lines_read());
  }

 private:
  enum class Timing { kUnknown, kFlops, kMilliseconds };

  void parse_line(const std::vector<std::string>& words, int line) {
    const std::string& key = words[0];
    if (key == "layer") return parse_layer(words, line);
    if (key == "model") {
      profile_.name = value_of(words, line, model_line_, "model NAME");
    } else if (key == "batch") {
      profile_.batch = static_cast<int>(whole(value_of(words, line, batch_line_, "batch N"), "batch", 1 << 20, line));
    } else if (key == "samples-per-s") {
      profile_.single_gpu_samples_per_s =
          positive(value_of(words, line, rate_line_, "samples-per-s X"), "samples-per-s", line);
    } else if (key == "bytes-per-parameter") {
      profile_.bytes_per_parameter = static_cast<int>(
          whole(value_of(words, line, bytes_line_, "bytes-per-parameter N"), "bytes-per-parameter", 16, line));
    } else {
      fail(line, fmt::format("unknown keyword '{}'; expected model, batch, samples-per-s, bytes-per-parameter or layer",
                             key));
    }
  }

  ModelProfile finish(int last_line) {
    if (model_line_ == 0) fail(last_line, "no 'model NAME' line; name the model");
    if (batch_line_ == 0) {
      fail(last_line, "no 'batch N' line; give the per-GPU batch the times are for");
    }
    if (profile_.layers.empty()) {
      fail(last_line, "no 'layer' lines; list the gradient tensors in forward order");
    }
    if (timing_ == Timing::kFlops) {
      if (rate_line_ == 0) {
        fail(last_line,
             "layers give flops= but there is no 'samples-per-s X' line to turn "
             "FLOPs into seconds");
      }
      set_times_from_flops(profile_, flops_);
    } else if (rate_line_ != 0) {
      scale_to_throughput(profile_);
    } else {
      profile_.single_gpu_samples_per_s = profile_.batch / profile_.iteration_s();
    }
    return std::move(profile_);
  }

  // The one value of a "keyword VALUE" line, given at most once per file.
  const std::string& value_of(const std::vector<std::string>& words, int line, int& seen_line,
                              const std::string& usage) {
    if (seen_line != 0) {
      fail(line, fmt::format("'{}' given twice (first on line {})", words[0], seen_line));
    }
    if (words.size() < 2) fail(line, fmt::format("missing value; expected '{}'", usage));
    if (words.size() > 2) fail(line, fmt::format("'{}' after the value; expected '{}'", words[2], usage));
    seen_line = line;
    return words[1];
  }

  long long whole(const std::string& s, const std::string& what, long long max, int line) const {
    return reader_.whole_number(line, s, what, 1, max);
  }

  double positive(const std::string& s, const std::string& what, int line) const {
    double v = 0;
    if (!parse_number(s, v)) fail(line, fmt::format("{} '{}' is not a number; expected e.g. 120.5", what, s));
    if (v <= 0) fail(line, fmt::format("{} is {}; it must be above 0", what, s));
    return v;
  }

  void parse_layer(const std::vector<std::string>& words, int line) {
    const std::string usage =
        "expected 'layer NAME params=N flops=F' or "
        "'layer NAME params=N forward-ms=A backward-ms=B'";
    if (words.size() < 2 || words[1].find('=') != std::string::npos) {
      fail(line, fmt::format("missing layer name; {}", usage));
    }
    const std::string& name = words[1];
    if (auto [it, fresh] = layer_lines_.emplace(name, line); !fresh) {
      fail(line, fmt::format("layer '{}' given twice (first on line {})", name, it->second));
    }
    std::map<std::string, std::string> keys;
    for (std::size_t i = 2; i < words.size(); ++i) {
      const auto eq = words[i].find('=');
      if (eq == std::string::npos) fail(line, fmt::format("'{}' is not KEY=VALUE; {}", words[i], usage));
      std::string key = words[i].substr(0, eq);
      if (key != "params" && key != "flops" && key != "forward-ms" && key != "backward-ms") {
        fail(line, fmt::format("unknown key '{}=' in layer '{}'; known: params=, flops=, forward-ms=, backward-ms=",
                               key, name));
      }
      if (eq + 1 == words[i].size()) fail(line, fmt::format("missing value after '{}='", key));
      if (!keys.emplace(key, words[i].substr(eq + 1)).second) {
        fail(line, fmt::format("'{}=' given twice in layer '{}'", key, name));
      }
    }
    if (!keys.count("params")) fail(line, fmt::format("layer '{}' has no params=N; {}", name, usage));
    LayerProfile layer{name, whole(keys["params"], "params", 1LL << 40, line), 0, 0};
    set_time(layer, keys, line);
    profile_.layers.push_back(std::move(layer));
  }

  // One file, one kind of time: FLOPs (scaled to samples-per-s) or
  // milliseconds, so that no layer's share depends on a guessed conversion.
  void set_time(LayerProfile& layer, std::map<std::string, std::string>& keys, int line) {
    const bool flops = keys.count("flops") != 0;
    const bool fwd = keys.count("forward-ms") != 0;
    const bool bwd = keys.count("backward-ms") != 0;
    if (flops && (fwd || bwd)) {
      fail(line, fmt::format("layer '{}' gives flops= and forward-ms=/backward-ms=; give one", layer.name));
    }
    if (!flops && fwd != bwd) {
      fail(line, fmt::format("layer '{}' gives {}; give both", layer.name,
                             fwd ? "forward-ms= without backward-ms=" : "backward-ms= without forward-ms="));
    }
    if (!flops && !fwd) {
      fail(line, fmt::format("layer '{}' has no time; give flops=F or forward-ms=A backward-ms=B", layer.name));
    }
    const Timing kind = flops ? Timing::kFlops : Timing::kMilliseconds;
    if (timing_ != Timing::kUnknown && timing_ != kind) {
      fail(line, fmt::format("layer '{}' gives {} but the layer on line {} gives {}; a profile uses one kind for all "
                             "its layers",
                             layer.name, flops ? "flops=" : "forward-ms=/backward-ms=", timing_line_,
                             flops ? "forward-ms=/backward-ms=" : "flops="));
    }
    if (timing_ == Timing::kUnknown) timing_line_ = line;
    timing_ = kind;
    if (flops) {
      flops_.push_back(positive(keys["flops"], "flops", line));
    } else {
      layer.forward_s = positive(keys["forward-ms"], "forward-ms", line) / 1e3;
      layer.backward_s = positive(keys["backward-ms"], "backward-ms", line) / 1e3;
    }
  }

  LineReader& reader_;
  ModelProfile profile_;
  int model_line_ = 0;  // 0: not seen yet
  int batch_line_ = 0;
  int rate_line_ = 0;
  int bytes_line_ = 0;
  std::map<std::string, int> layer_lines_;
  Timing timing_ = Timing::kUnknown;
  int timing_line_ = 0;
  std::vector<double> flops_;  // per layer, when timing_ is kFlops
};

}  // namespace

ModelProfile load_profile_file(const std::string& path) {
  LineReader reader = LineReader::from_file(path, "cannot read profile file", kProfileFormat);
  return ProfileParser(reader).parse();
}

ModelProfile resolve_profile(const std::string& name_or_path) {
  for (const auto& name : builtin_profile_names()) {
    if (name == name_or_path) return builtin_profile(name);
  }
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec)) return load_profile_file(name_or_path);
  throw ProfileError(fmt::format("unknown profile '{}': not a built-in ({}) and no such file", name_or_path,
                                 fmt::join(builtin_profile_names(), ", ")));
}

}  // namespace murmur::sim
