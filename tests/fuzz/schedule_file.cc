// Harness: schedule files and the --schedule flag
// (gossip/schedule/schedule_file.h). Input: the text. Each parses or throws
// ScheduleError.
#include <sstream>

#include "fuzz_target.h"
#include "gossip/schedule/errors.h"
#include "gossip/schedule/schedule_file.h"

namespace schedule = murmur::gossip::schedule;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    (void)schedule::parse_schedule(in, "fuzz.schedule");
  } catch (const schedule::ScheduleError&) {
  }
  // "@path" reads a file: not this harness's subject (and "@/dev/zero" would
  // never end).
  if (!text.empty() && text[0] == '@') return 0;
  try {
    (void)schedule::parse_schedule_flag(text);
  } catch (const schedule::ScheduleError&) {
  }
  return 0;
}
