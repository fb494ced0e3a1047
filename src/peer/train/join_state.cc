#include "peer/train/join_state.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <stdexcept>

namespace murmur::peer::train {

std::string encode_join_state(const JoinState& s) {
  const nlohmann::json header = {{"step", s.step},
                                 {"epoch", s.epoch},
                                 {"step_in_epoch", s.step_in_epoch},
                                 {"steps_per_epoch", s.steps_per_epoch},
                                 {"schedule_steps_per_epoch", s.schedule_steps_per_epoch},
                                 {"partition_generation", s.partition_generation},
                                 {"momentum", s.momentum.size()}};
  std::string out = header.dump() + "\n";
  const std::size_t at = out.size();
  out.resize(at + s.momentum.size() * sizeof(float));
  if (!s.momentum.empty()) std::memcpy(out.data() + at, s.momentum.data(), s.momentum.size() * sizeof(float));
  return out;
}

JoinState decode_join_state(const std::string& bytes, std::size_t parameters, int epochs) {
  const auto line_end = bytes.find('\n');
  if (line_end == std::string::npos) throw std::invalid_argument("join state: no header line");
  nlohmann::json h = nlohmann::json::parse(bytes.substr(0, line_end), nullptr, /*allow_exceptions=*/false);
  if (!h.is_object()) throw std::invalid_argument("join state: the header is not a JSON object");
  auto integer = [&h](const char* key, std::int64_t lo, std::int64_t hi) {
    if (!h.contains(key) || !h[key].is_number_integer())
      throw std::invalid_argument(std::string("join state: '") + key + "' is missing or not an integer");
    const auto v = h[key].get<std::int64_t>();
    if (v < lo || v > hi)
      throw std::invalid_argument(std::string("join state: '") + key + "' = " + std::to_string(v) + " is outside " +
                                  std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  };
  JoinState s;
  constexpr std::int64_t kMax = std::int64_t{1} << 40;
  s.steps_per_epoch = integer("steps_per_epoch", 1, kMax);
  s.schedule_steps_per_epoch = integer("schedule_steps_per_epoch", 1, kMax);
  s.epoch = static_cast<int>(integer("epoch", 0, epochs - 1));
  s.step_in_epoch = integer("step_in_epoch", 0, s.steps_per_epoch - 1);
  s.step = integer("step", 0, kMax);
  s.partition_generation = static_cast<std::uint64_t>(integer("partition_generation", 0, kMax));
  const auto count = static_cast<std::size_t>(integer("momentum", 0, static_cast<std::int64_t>(parameters)));
  if (count != 0 && count != parameters)
    throw std::invalid_argument("join state: momentum of " + std::to_string(count) + " values for a model of " +
                                std::to_string(parameters));
  if (bytes.size() - line_end - 1 != count * sizeof(float))
    throw std::invalid_argument("join state: " + std::to_string(bytes.size() - line_end - 1) +
                                " bytes of momentum, expected " + std::to_string(count * sizeof(float)));
  s.momentum.resize(count);
  if (count) std::memcpy(s.momentum.data(), bytes.data() + line_end + 1, count * sizeof(float));
  return s;
}

}  // namespace murmur::peer::train
