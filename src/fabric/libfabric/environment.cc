#include "fabric/libfabric/environment.h"

#include <strings.h>

#include <cstdlib>

namespace murmur::fabric::libfabric {

std::optional<bool> environment_bool(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  for (const char* truth : {"1", "true", "yes", "on"}) {
    if (::strcasecmp(value, truth) == 0) return true;
  }
  for (const char* falsehood : {"0", "false", "no", "off"}) {
    if (::strcasecmp(value, falsehood) == 0) return false;
  }
  return std::nullopt;
}

std::optional<long> environment_integer(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*end != '\0') return std::nullopt;
  return parsed;
}

}  // namespace murmur::fabric::libfabric
