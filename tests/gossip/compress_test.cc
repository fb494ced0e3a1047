// Compressor layer: round trips, statistics, wire sizes, error feedback,
// malformed messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "gossip/compress/compressor.h"

namespace mg = murmur::gossip;

namespace {

std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

struct RoundTrip {
  std::vector<std::byte> msg;
  std::vector<float> out;
};

RoundTrip round_trip(mg::Compressor& tx, mg::Compressor& rx, std::span<const float> x, const mg::EncodeParams& p = {}) {
  RoundTrip r;
  r.msg.resize(tx.max_encoded_bytes(x.size(), p));
  const std::size_t bytes = tx.encode(x, r.msg, p);
  EXPECT_LE(bytes, r.msg.size());
  r.msg.resize(bytes);
  r.out.assign(x.size(), -12345.0f);
  rx.decode(r.msg, r.out);
  return r;
}

const char* kSpecs[] = {"identity",  "fp16",     "bf16",   "qsgd:16",   "qsgd:1",    "sign",
                        "topk:0.01", "topk:0.5", "topk:1", "randk:0.1", "powersgd:2"};

class EveryCompressor : public ::testing::TestWithParam<std::tuple<const char*, std::size_t>> {};

TEST_P(EveryCompressor, RoundTripSizesAndTruncation) {
  const auto [spec, n] = GetParam();
  auto tx = mg::make_compressor(spec, mg::Feedback::kNone);
  auto rx = mg::make_compressor(spec, mg::Feedback::kNone);
  EXPECT_EQ(tx->name(), spec);
  const auto x = randn(n, 11);
  auto r = round_trip(*tx, *rx, x);
  EXPECT_LE(r.msg.size(), tx->max_encoded_bytes(n));
  for (float v : r.out) ASSERT_TRUE(std::isfinite(v));
  // Every strict prefix and one extra byte are rejected.
  std::vector<float> out(n);
  for (std::size_t len = 0; len < r.msg.size(); len += 1 + r.msg.size() / 50)
    EXPECT_THROW(rx->decode(std::span(r.msg).first(len), out), mg::MalformedMessage) << spec << " len " << len;
  auto longer = r.msg;
  longer.push_back(std::byte{0});
  EXPECT_THROW(rx->decode(longer, out), mg::MalformedMessage);
  // A receiver expecting another n rejects it.
  std::vector<float> wrong(n + 1);
  EXPECT_THROW(rx->decode(r.msg, wrong), mg::MalformedMessage);
}

TEST_P(EveryCompressor, RandomGarbageNeverCrashes) {
  const auto [spec, n] = GetParam();
  auto tx = mg::make_compressor(spec, mg::Feedback::kNone);
  auto rx = mg::make_compressor(spec, mg::Feedback::kNone);
  const auto x = randn(n, 12);
  auto r = round_trip(*tx, *rx, x);
  std::mt19937 gen(5);
  std::vector<float> out(n);
  for (int t = 0; t < 300; ++t) {
    auto m = r.msg;
    for (int f = 0; f < 3; ++f) m[gen() % m.size()] = std::byte(gen());
    try {
      rx->decode(m, out);  // either decodes (a valid-looking message) or throws MalformedMessage
    } catch (const mg::MalformedMessage&) {
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, EveryCompressor,
                         ::testing::Combine(::testing::ValuesIn(kSpecs), ::testing::Values(1, 13, 1000, 4099)));

TEST(Compressors, ExactValues) {
  const auto x = randn(1001, 1);
  auto id = mg::make_compressor("identity");
  auto r = round_trip(*id, *id, x);
  EXPECT_EQ(r.out, x);
  EXPECT_EQ(r.msg.size(), 8 + 4 * x.size());

  auto h = mg::make_compressor("fp16", mg::Feedback::kNone);
  r = round_trip(*h, *h, x);
  EXPECT_EQ(r.msg.size(), 8 + 2 * x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(std::fabs(r.out[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-25f);

  auto b = mg::make_compressor("bf16", mg::Feedback::kNone);
  r = round_trip(*b, *b, x);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(r.out[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);

  auto s = mg::make_compressor("sign", mg::Feedback::kNone);
  r = round_trip(*s, *s, x);
  EXPECT_EQ(r.msg.size(), 8 + 4 + (x.size() + 7) / 8);
  double l1 = 0;
  for (float v : x) l1 += std::fabs(v);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(std::fabs(r.out[i]), l1 / x.size(), 1e-5);
    EXPECT_EQ(std::signbit(r.out[i]), std::signbit(x[i]));
  }

  auto q = mg::make_compressor("qsgd:16");  // unbiased: no feedback wrapper
  EXPECT_EQ(q->name(), "qsgd:16");
  r = round_trip(*q, *q, x);
  EXPECT_EQ(r.msg.size(), 8 + 4 + (x.size() * 6 + 7) / 8);
}

TEST(Compressors, QsgdUnbiasedOverSeeds) {
  const auto x = randn(500, 2);
  auto q = mg::make_compressor("qsgd:4");
  std::vector<double> mean(x.size(), 0.0);
  const int draws = 2000;
  for (int d = 0; d < draws; ++d) {
    mg::EncodeParams p;
    p.seed = 100 + d;
    auto r = round_trip(*q, *q, x, p);
    for (std::size_t i = 0; i < x.size(); ++i) mean[i] += r.out[i] / draws;
  }
  const double norm = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0));
  const double step = norm / 4;
  double err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) err += (mean[i] - x[i]) * (mean[i] - x[i]);
  EXPECT_LT(std::sqrt(err / x.size()), 1.5 * step / (2 * std::sqrt(double(draws))));
}

TEST(Compressors, TopKKeepsTheLargestAndPicksSmallerIndexCoding) {
  const std::size_t n = 20000;
  const auto x = randn(n, 3);
  for (double ratio : {0.001, 0.01, 0.2}) {
    const std::size_t k = static_cast<std::size_t>(std::ceil(ratio * n));
    auto t = mg::make_compressor("topk:" + std::to_string(ratio), mg::Feedback::kNone);
    auto r = round_trip(*t, *t, x);
    std::vector<float> mags(n), kept;
    for (std::size_t i = 0; i < n; ++i) mags[i] = std::fabs(x[i]);
    std::sort(mags.begin(), mags.end(), std::greater<>());
    for (std::size_t i = 0; i < n; ++i)
      if (r.out[i] != 0) {
        EXPECT_EQ(r.out[i], x[i]);
        kept.push_back(std::fabs(x[i]));
      }
    ASSERT_EQ(kept.size(), k) << ratio;
    std::sort(kept.begin(), kept.end(), std::greater<>());
    EXPECT_TRUE(std::equal(kept.begin(), kept.end(), mags.begin()));
    // format byte: varint (0) for sparse sets, bitmap (1) once k is dense enough
    const auto format = static_cast<unsigned>(r.msg[1]);
    EXPECT_EQ(format, ratio >= 0.2 ? 1u : 0u) << ratio;
    std::uint32_t index_bytes;
    std::memcpy(&index_bytes, r.msg.data() + 12, 4);
    if (format == 1) {
      EXPECT_EQ(index_bytes, (n + 7) / 8);
    } else {
      EXPECT_LT(index_bytes, (n + 7) / 8);
    }
    EXPECT_EQ(r.msg.size(), 16 + ((index_bytes + 3) & ~3u) + 4 * k);
  }
}

TEST(Compressors, TopKRejectsBadIndices) {
  std::vector<float> x(100, 0.0f);
  x[10] = 5;
  x[20] = -3;
  auto t = mg::make_compressor("topk:0.02", mg::Feedback::kNone);
  auto r = round_trip(*t, *t, x);
  ASSERT_EQ(static_cast<unsigned>(r.msg[1]), 0u);  // varint: indices 10, then gap 9
  std::vector<float> out(100);
  auto m = r.msg;
  m[16] = std::byte{120};  // first index 120 >= n
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
  m = r.msg;
  m[8] = std::byte{101};  // k > n
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
  m = r.msg;
  m[1] = std::byte{7};  // unknown index format
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
  m = r.msg;
  m[0] = std::byte{2};  // another codec's id
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
}

TEST(Compressors, TopKOfEveryEntrySendsNoIndices) {
  const std::size_t n = 1000;
  auto x = randn(n, 5);
  x[3] = 0;  // a zero is an entry like any other
  auto t = mg::make_compressor("topk:1", mg::Feedback::kNone);
  auto r = round_trip(*t, *t, x);
  EXPECT_EQ(static_cast<unsigned>(r.msg[1]), 2u);  // every entry, in index order
  EXPECT_EQ(r.msg.size(), 16 + 4 * n);
  EXPECT_EQ(r.out, x);
  // Format 2 must say k = n and carry no index bytes.
  std::vector<float> out(n);
  auto m = r.msg;
  m[8] = std::byte{0xe7};  // k = 999
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
  m = r.msg;
  m[12] = std::byte{4};  // 4 index bytes
  EXPECT_THROW(t->decode(m, out), mg::MalformedMessage);
  // A ratio just short of 1 selects as before.
  auto almost = mg::make_compressor("topk:0.999", mg::Feedback::kNone);
  EXPECT_EQ(static_cast<unsigned>(round_trip(*almost, *almost, x).msg[1]), 1u);
}

TEST(Compressors, RandKCountAndSeedOnTheWire) {
  const std::size_t n = 10000;
  const auto x = randn(n, 4);
  auto tx = mg::make_compressor("randk:0.05", mg::Feedback::kNone);
  auto rx = mg::make_compressor("randk:0.05", mg::Feedback::kNone);
  auto r = round_trip(*tx, *rx, x);
  EXPECT_EQ(r.msg.size(), 8 + 12 + 4 * 500);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (r.out[i] != 0) {
      ++kept;
      EXPECT_EQ(r.out[i], x[i]);  // unscaled
    }
  EXPECT_EQ(kept, 500u);
  auto r2 = round_trip(*tx, *rx, x);  // next call draws another subset
  EXPECT_NE(r.out, r2.out);
}

TEST(Compressors, PowerSgdRecoversLowRank) {
  const std::size_t rows = 64, cols = 48, rank = 3;
  const auto a = randn(rows * rank, 5), b = randn(cols * rank, 6);
  std::vector<float> m(rows * cols, 0.0f);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      for (std::size_t c = 0; c < rank; ++c) m[i * cols + j] += a[i * rank + c] * b[j * rank + c];
  auto tx = mg::make_compressor("powersgd:3", mg::Feedback::kNone);
  auto rx = mg::make_compressor("powersgd:3", mg::Feedback::kNone);
  mg::EncodeParams p;
  p.rows = rows;
  p.cols = cols;
  auto r = round_trip(*tx, *rx, m, p);
  EXPECT_EQ(r.msg.size(), 8 + 12 + 4 * rank * (rows + cols));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    num += (r.out[i] - m[i]) * (r.out[i] - m[i]);
    den += m[i] * m[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
  mg::EncodeParams bad;
  bad.rows = 7;
  bad.cols = 7;
  std::vector<std::byte> msg(1 << 16);
  EXPECT_THROW(tx->encode(m, msg, bad), std::invalid_argument);
}

class Feedback : public ::testing::TestWithParam<const char*> {};

TEST_P(Feedback, CarriesTheResidual) {
  const std::size_t n = 3000;
  auto c = mg::make_compressor(GetParam());
  auto* ef = dynamic_cast<mg::ErrorFeedback*>(c.get());
  ASSERT_NE(ef, nullptr) << GetParam() << " is biased and should get error feedback";
  EXPECT_EQ(c->name(), std::string("ef(") + GetParam() + ")");
  auto rx = mg::make_compressor(GetParam(), mg::Feedback::kNone);
  std::vector<double> sum_in(n, 0.0), sum_out(n, 0.0);
  std::vector<std::byte> msg(c->max_encoded_bytes(n));
  std::vector<float> out(n);
  for (int step = 0; step < 20; ++step) {
    const auto x = randn(n, 100 + step);
    const std::size_t bytes = c->encode(x, msg);
    rx->decode(std::span(msg).first(bytes), out);
    for (std::size_t i = 0; i < n; ++i) {
      sum_in[i] += x[i];
      sum_out[i] += out[i];
    }
  }
  const auto e = ef->residual();
  ASSERT_EQ(e.size(), n);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(sum_out[i] + e[i] - sum_in[i]));
  EXPECT_LT(worst, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Biased, Feedback,
                         ::testing::Values("fp16", "bf16", "sign", "topk:0.01", "randk:0.1", "powersgd:2"));

TEST(Factory, ParsesAndRejectsSpecs) {
  EXPECT_EQ(mg::make_compressor("topk:0.01", mg::Feedback::kNone)->name(), "topk:0.01");
  EXPECT_EQ(mg::make_compressor("powersgd:4", mg::Feedback::kNone)->name(), "powersgd:4");
  EXPECT_FALSE(mg::make_compressor("identity")->biased());
  for (const char* bad : {"", "topk", "topk:", "topk:0", "topk:1.5", "topk:abc", "qsgd:0", "qsgd:128", "powersgd:0",
                          "sign:3", "zip", "qsgd:4x"}) {
    try {
      mg::make_compressor(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const mg::BadCompressorSpec& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
