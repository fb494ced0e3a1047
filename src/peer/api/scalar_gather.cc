#include "peer/api/scalar_gather.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "fabric/rendezvous/client.h"

namespace murmur::peer {

ScalarGather::ScalarGather(fabric::Group& group, std::string prefix, std::chrono::milliseconds timeout)
    : group_(group), prefix_(std::move(prefix)), timeout_(timeout) {}

std::vector<double> ScalarGather::all(double value, const std::string& what) {
  const std::string prefix = prefix_ + std::to_string(sequence_++) + "/";
  char text[64];
  std::snprintf(text, sizeof(text), "%a", value);  // hex float: exact
  auto& control = group_.control();
  control.set(prefix + std::to_string(group_.rank()), text);
  std::vector<double> values;
  values.reserve(group_.size());
  for (int r = 0; r < group_.size(); ++r) {
    const std::string reply = control.wait(prefix + std::to_string(r), timeout_);
    char* end = nullptr;
    const double v = std::strtod(reply.c_str(), &end);
    if (end == reply.c_str() || *end != '\0' || !std::isfinite(v)) {
      throw std::runtime_error("rank " + std::to_string(r) + " (" + group_.peers()[r].host + ") contributed '" +
                               reply + "' to " + what + ", not a finite number");
    }
    values.push_back(v);
  }
  return values;
}

}  // namespace murmur::peer
