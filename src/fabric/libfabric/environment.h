// libfabric's own settings as it reads them from the environment, for the
// checks murmur makes before libfabric starts (a provider's variables are
// read once, when libfabric first initialises). Pure functions of the
// environment; thread-safe as std::getenv is (nothing here sets it).
// Internal to libfabric/.
#pragma once

#include <optional>

namespace murmur::fabric::libfabric {

// A boolean variable as fi_param_get_bool reads it: true for 1, true, yes
// or on, false for 0, false, no or off (any case); nullopt when unset or
// anything else (libfabric then keeps its default).
std::optional<bool> environment_bool(const char* name);

// An integer variable as fi_param_get_int reads it: nullopt when unset,
// empty or not a whole decimal number.
std::optional<long> environment_integer(const char* name);

}  // namespace murmur::fabric::libfabric
