// Harness: link profiles and shaper files (fabric/shaper): the
// "lat=20us,bw=10gbit" spec, durations, and a whole shaper file. Input:
// the text. Each parses or throws ProfileError; a profile that parses reads
// back from its own text.
#include "fabric/shaper/link_profile.h"
#include "fabric/shaper/shaper_config.h"
#include "fuzz_target.h"

namespace shaper = murmur::fabric::shaper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto profile = shaper::parse_link_profile(text);
    (void)shaper::parse_link_profile(shaper::to_string(profile));
  } catch (const shaper::ProfileError&) {
  }
  try {
    (void)shaper::parse_duration(text);
  } catch (const shaper::ProfileError&) {
  }
  try {
    (void)shaper::parse_shaper_config(text, "fuzz.shaper");
  } catch (const shaper::ProfileError&) {
  }
  return 0;
}
