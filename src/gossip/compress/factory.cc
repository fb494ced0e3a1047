// make_compressor: parses a spec, builds the codec, adds error feedback.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/check.h"

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
    bad(spec, std::string(what) + " '" + std::string(arg) + "' is not an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
  return v;
}

CompressorSpec parse_spec(std::string_view spec) {
  using Kind = CompressorSpec::Kind;
  const auto colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const bool has_arg = colon != std::string_view::npos;
  const std::string_view arg = has_arg ? spec.substr(colon + 1) : std::string_view{};
  auto no_arg = [&](Kind k) {
    if (has_arg) bad(spec, "'" + std::string(kind) + "' takes no argument");
    return CompressorSpec{.kind = k};
  };
  auto need_arg = [&]() {
    if (!has_arg || arg.empty()) bad(spec, "'" + std::string(kind) + "' needs an argument after ':'");
  };
  if (kind == "identity") return no_arg(Kind::kIdentity);
  if (kind == "fp16") return no_arg(Kind::kFp16);
  if (kind == "bf16") return no_arg(Kind::kBf16);
  if (kind == "sign") return no_arg(Kind::kSign);
  // An unknown name is named as such first: "none" is not a kind that
  // lacks its argument.
  if (kind != "qsgd" && kind != "topk" && kind != "randk" && kind != "powersgd")
    bad(spec, "unknown compressor '" + std::string(kind) + "'");
  need_arg();
  if (kind == "qsgd")
    return {.kind = Kind::kQsgd, .param = parse_int(spec, arg, 1, kernels::kQsgdMaxLevels, "level count")};
  if (kind == "topk") return {.kind = Kind::kTopk, .ratio = parse_ratio(spec, arg)};
  if (kind == "randk") return {.kind = Kind::kRandk, .ratio = parse_ratio(spec, arg)};
  return {.kind = Kind::kPowersgd, .param = parse_int(spec, arg, 1, 64, "rank")};
}

std::unique_ptr<Compressor> make_bare(const CompressorSpec& spec) {
  using Kind = CompressorSpec::Kind;
  switch (spec.kind) {
    case Kind::kIdentity:
      return make_identity();
    case Kind::kFp16:
      return make_fp16();
    case Kind::kBf16:
      return make_bf16();
    case Kind::kSign:
      return make_sign();
    case Kind::kQsgd:
      return make_qsgd(spec.param);
    case Kind::kTopk:
      return make_topk(spec.ratio);
    case Kind::kRandk:
      return make_randk(spec.ratio);
    case Kind::kPowersgd:
      return make_powersgd(spec.param);
  }
  MURMUR_CHECK(false);
  return nullptr;
}

}  // namespace

CompressorSpec CompressorSpec::with_ratio(double new_ratio) const {
  MURMUR_CHECK(sparse());
  MURMUR_CHECK(new_ratio > 0 && new_ratio <= 1);
  CompressorSpec s = *this;
  s.ratio = new_ratio;
  return s;
}

std::string CompressorSpec::text() const {
  switch (kind) {
    case Kind::kIdentity:
      return "identity";
    case Kind::kFp16:
      return "fp16";
    case Kind::kBf16:
      return "bf16";
    case Kind::kSign:
      return "sign";
    case Kind::kQsgd:
      return "qsgd:" + std::to_string(param);
    case Kind::kPowersgd:
      return "powersgd:" + std::to_string(param);
    case Kind::kTopk:
    case Kind::kRandk: {
      // %.9g keeps small ratios exact where std::to_string's six decimals
      // would round them to zero.
      char spec[64];
      std::snprintf(spec, sizeof spec, "%s:%.9g", kind == Kind::kTopk ? "topk" : "randk", ratio);
      return spec;
    }
  }
  return "?";
}

CompressorSpec parse_compressor_spec(std::string_view spec) { return parse_spec(spec); }

std::unique_ptr<Compressor> make_compressor(const CompressorSpec& spec, Feedback feedback) {
  auto c = make_bare(spec);
  if (feedback == Feedback::kAuto && c->biased()) return std::make_unique<ErrorFeedback>(std::move(c));
  return c;
}

std::unique_ptr<Compressor> make_compressor(std::string_view spec, Feedback feedback) {
  return make_compressor(parse_compressor_spec(spec), feedback);
}

namespace detail {

void expect_ok(kernels::Status s, const char* codec, const char* kernel) {
  if (s == kernels::Status::kOk) return;
  if (s == kernels::Status::kMalformed)
    throw MalformedMessage(std::string("compressor ") + codec + ": malformed message (" + kernel + ": " +
                           kernels::to_string(s) + ")");
  throw std::logic_error(std::string("compressor ") + codec + ": kernel " + kernel +
                         " failed: " + kernels::to_string(s));
}

void not_finite(const char* codec, const char* what) {
  throw std::invalid_argument(std::string("compressor ") + codec + ": cannot encode a tensor whose " + what +
                              " is not finite (it holds NaN or Inf, or values too large to square in a float); "
                              "look for a diverging loss or a learning rate that is too high");
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
