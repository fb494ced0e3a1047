// make_compressor: parses a spec, builds the codec, adds error feedback.
#include <charconv>
#include <cmath>
#include <string>

#include "gossip/compress/codecs.h"

namespace murmur::gossip {
namespace {

constexpr const char* kForms =
    "accepted: identity, fp16, bf16, sign, qsgd:<levels 1..127>, topk:<ratio in (0,1]>, "
    "randk:<ratio in (0,1]>, powersgd:<rank 1..64>";

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throw BadCompressorSpec("compressor spec '" + std::string(spec) + "': " + why + " (" + kForms + ")");
}

double parse_ratio(std::string_view spec, std::string_view arg) {
  // std::from_chars for double is in libstdc++ 11+.
  double v = 0;
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (ec != std::errc() || end != arg.data() + arg.size() || !(v > 0.0 && v <= 1.0))
    bad(spec, "ratio '" + std::string(arg) + "' is not a number in (0, 1]");
  return v;
}

unsigned parse_int(std::string_view spec, std::string_view arg, unsigned lo, unsigned hi, const char* what) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (ec != std::errc() || end != arg.data() + arg.size() || v < lo || v > hi)
    bad(spec, std::string(what) + " '" + std::string(arg) + "' is not an integer in [" + std::to_string(lo) +
                  ", " + std::to_string(hi) + "]");
  return v;
}

std::unique_ptr<Compressor> make_bare(std::string_view spec) {
  const auto colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const bool has_arg = colon != std::string_view::npos;
  const std::string_view arg = has_arg ? spec.substr(colon + 1) : std::string_view{};
  auto no_arg = [&]() {
    if (has_arg) bad(spec, "'" + std::string(kind) + "' takes no argument");
  };
  auto need_arg = [&]() {
    if (!has_arg || arg.empty()) bad(spec, "'" + std::string(kind) + "' needs an argument after ':'");
  };
  if (kind == "identity") { no_arg(); return make_identity(); }
  if (kind == "fp16") { no_arg(); return make_fp16(); }
  if (kind == "bf16") { no_arg(); return make_bf16(); }
  if (kind == "sign") { no_arg(); return make_sign(); }
  if (kind == "qsgd") { need_arg(); return make_qsgd(parse_int(spec, arg, 1, kernels::kQsgdMaxLevels, "level count")); }
  if (kind == "topk") { need_arg(); return make_topk(parse_ratio(spec, arg)); }
  if (kind == "randk") { need_arg(); return make_randk(parse_ratio(spec, arg)); }
  if (kind == "powersgd") { need_arg(); return make_powersgd(parse_int(spec, arg, 1, 64, "rank")); }
  bad(spec, "unknown compressor '" + std::string(kind) + "'");
}

}  // namespace

std::unique_ptr<Compressor> make_compressor(std::string_view spec, Feedback feedback) {
  auto c = make_bare(spec);
  if (feedback == Feedback::kAuto && c->biased()) return std::make_unique<ErrorFeedback>(std::move(c));
  return c;
}

namespace detail {

void expect_ok(kernels::Status s, const char* codec, const char* kernel) {
  if (s == kernels::Status::kOk) return;
  if (s == kernels::Status::kMalformed)
    throw MalformedMessage(std::string("compressor ") + codec + ": malformed message (" + kernel + ": " +
                           kernels::to_string(s) + ")");
  throw std::logic_error(std::string("compressor ") + codec + ": kernel " + kernel + " failed: " +
                         kernels::to_string(s));
}

std::size_t count_for_ratio(double ratio, std::size_t n) {
  if (n == 0) return 0;
  const auto k = static_cast<std::size_t>(std::ceil(ratio * double(n) - 1e-9));
  return std::min(n, std::max<std::size_t>(k, 1));
}

std::uint64_t next_seed(std::uint64_t& counter, const EncodeParams& p) {
  if (p.seed) return *p.seed;
  return 0x5eed0000ull + counter++;
}

}  // namespace detail
}  // namespace murmur::gossip
