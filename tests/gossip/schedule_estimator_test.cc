// LinkEstimator and ComputeEstimator on synthetic transfers: times computed
// from a known latency and bandwidth, with multiplicative noise from a seeded
// generator (deterministic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/check.h"
#include "gossip/schedule/compute_estimator.h"
#include "gossip/schedule/link_estimator.h"

namespace murmur::gossip::schedule {
namespace {

constexpr double k10Gbit = 10e9 / 8;  // bytes per second
constexpr double k100Mbit = 100e6 / 8;

// A link with a true latency and bandwidth, and +-noise relative jitter.
struct TrueLink {
  double latency_s;
  double bandwidth_Bps;
  double seconds(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
};

class Noise {
 public:
  Noise(double amplitude, unsigned seed) : rng_(seed), u_(1 - amplitude, 1 + amplitude) {}
  double operator()() { return u_(rng_); }

 private:
  std::mt19937 rng_;
  std::uniform_real_distribution<double> u_;
};

TEST(LinkEstimator, RecoversLatencyAndBandwidthFromMixedSizes) {
  const TrueLink link{50e-6, k10Gbit};
  Noise noise(0.05, 1);
  LinkEstimator est;
  const double sizes[] = {256, 64e3, 1e6, 4e6};
  double now = 0;
  for (int i = 0; i < 32; ++i) {
    const double bytes = sizes[i % 4];
    now += 0.01;
    est.observe(bytes, link.seconds(bytes) * noise(), now);
  }
  const LinkEstimate e = est.estimate();
  EXPECT_EQ(e.samples, 16u);
  EXPECT_EQ(e.observed, 32u);
  EXPECT_EQ(e.changes, 0u);
  EXPECT_NEAR(e.latency_s, link.latency_s, 0.2 * link.latency_s);
  EXPECT_NEAR(e.bandwidth_Bps, link.bandwidth_Bps, 0.1 * link.bandwidth_Bps);
  EXPECT_NEAR(est.predict(2e6), link.seconds(2e6), 0.1 * link.seconds(2e6));
}

TEST(LinkEstimator, OneMessageSizeIsPinnedByProbes) {
  // A gossip link carries one size per round: the probes give the line its
  // second point, however long ago they were sent.
  const TrueLink link{200e-6, k100Mbit};
  Noise noise(0.1, 2);
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 3; ++i) est.observe(64, link.seconds(64) * noise(), now += 0.001);
  for (int i = 0; i < 20; ++i) est.observe(1e6, link.seconds(1e6) * noise(), now += 0.1);
  const LinkEstimate e = est.estimate();
  EXPECT_NEAR(e.latency_s, link.latency_s, 0.1 * link.latency_s);
  EXPECT_NEAR(e.bandwidth_Bps, link.bandwidth_Bps, 0.1 * link.bandwidth_Bps);
}

TEST(LinkEstimator, OneMessageSizeWithoutProbesStillPredictsThatSize) {
  // No second point: all of the time is put on the bandwidth (latency 0), so
  // the one size in use is still predicted right.
  const TrueLink link{200e-6, k100Mbit};
  Noise noise(0.1, 6);
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 20; ++i) est.observe(1e6, link.seconds(1e6) * noise(), now += 0.1);
  EXPECT_EQ(est.estimate().latency_s, 0);
  EXPECT_NEAR(est.predict(1e6), link.seconds(1e6), 0.1 * link.seconds(1e6));
}

TEST(LinkEstimator, LatencyIsNeverBelowWhatProbesMeasured) {
  // Two close sizes pin the latency poorly: here the 64 KB transfers run 10%
  // fast and the 128 KB ones 10% slow, so the line through them alone has a
  // negative intercept, and it drags the joint fit's intercept below every
  // probe. The fastest probe is the floor, so small messages are not
  // predicted cheaper than they were measured.
  const TrueLink link{25e-6, k10Gbit};
  Noise noise(0.1, 5);
  Noise jitter(0.02, 7);
  LinkEstimator est;
  double now = 0;
  double lowest_probe = 1;
  for (int i = 0; i < 3; ++i) {
    const double seconds = link.seconds(64) * noise();
    lowest_probe = std::min(lowest_probe, seconds);
    est.observe(64, seconds, now += 0.001);
  }
  for (int i = 0; i < 32; ++i) {
    const double bytes = i % 2 ? 128e3 : 64e3;
    const double bias = i % 2 ? 1.1 : 0.9;
    est.observe(bytes, link.seconds(bytes) * bias * jitter(), now += 0.01);
  }
  EXPECT_EQ(est.estimate().changes, 0u);
  EXPECT_GE(est.estimate().latency_s, lowest_probe);
  EXPECT_NEAR(est.predict(6000), link.seconds(6000), 0.15 * link.seconds(6000));
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 0.1 * k10Gbit);
}

TEST(LinkEstimator, SmallMessagesAloneGiveLatencyButNoBandwidth) {
  LinkEstimator est;
  EXPECT_FALSE(est.estimate().known());
  EXPECT_EQ(est.predict(1e6), 0);
  est.observe(64, 30e-6, 1);
  est.observe(128, 32e-6, 2);
  const LinkEstimate e = est.estimate();
  EXPECT_TRUE(e.known());
  EXPECT_FALSE(e.bandwidth_known());
  EXPECT_DOUBLE_EQ(e.latency_s, 30e-6);
  EXPECT_DOUBLE_EQ(est.predict(1e6), 30e-6);  // latency alone until a large message is seen
}

// Feeds `link` until the bandwidth estimate is within 1.5x of the truth;
// returns how many samples that took (or 100 if never). Sizes alternate
// between 1 MB and 4 MB with a probe every third sample; +-10% noise.
int samples_until_tracked(LinkEstimator& est, const TrueLink& link, Noise& noise, double& now) {
  for (int i = 1; i <= 100; ++i) {
    const double bytes = i % 3 == 0 ? 64 : (i % 2 == 0 ? 1e6 : 4e6);
    est.observe(bytes, link.seconds(bytes) * noise(), now += 0.01);
    const double bw = est.estimate().bandwidth_Bps;
    if (bw > link.bandwidth_Bps / 1.5 && bw < link.bandwidth_Bps * 1.5) return i;
  }
  return 100;
}

TEST(LinkEstimator, HundredfoldDropAndRecoveryShowWithinFiveSamples) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  Noise noise(0.1, 3);
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 20; ++i) {
    const double bytes = i % 2 ? 4e6 : 1e6;
    est.observe(bytes, fast.seconds(bytes) * noise(), now += 0.01);
  }
  ASSERT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 0.15 * k10Gbit);

  const double drop_time = now;
  const int to_drop = samples_until_tracked(est, slow, noise, now);
  EXPECT_LE(to_drop, 5);
  EXPECT_EQ(est.estimate().changes, 1u);
  ASSERT_TRUE(est.estimate().last_change_time.has_value());
  EXPECT_GT(*est.estimate().last_change_time, drop_time);
  // Settles on the new bandwidth, not just near it.
  for (int i = 0; i < 10; ++i) est.observe(2e6, slow.seconds(2e6) * noise(), now += 0.2);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k100Mbit, 0.1 * k100Mbit);

  const int to_recover = samples_until_tracked(est, fast, noise, now);
  EXPECT_LE(to_recover, 5);
  EXPECT_EQ(est.estimate().changes, 2u);
}

TEST(LinkEstimator, OneSizeFitTakesASecondSizeAsItsSecondPoint) {
  // 5 ms per message on 10 Gbit/s, measured at 750 KB only: the one-size fit
  // says 134 MB/s, so it predicts 22 ms for 3 MB, which take 7.4 ms. Off by
  // 3x, that one transfer would be a suspect change and be dropped; it is
  // the second point the line needs (the scheduler's exploration), and one
  // is enough.
  const TrueLink link{5e-3, k10Gbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(750e3, link.seconds(750e3), now += 0.01);
  ASSERT_FALSE(est.estimate().line_identified);
  ASSERT_GT(est.predict(3e6), 3 * link.seconds(3e6));
  est.observe(3e6, link.seconds(3e6), now += 0.01);
  EXPECT_TRUE(est.estimate().line_identified);
  EXPECT_EQ(est.estimate().changes, 0u);
  EXPECT_NEAR(est.estimate().latency_s, 5e-3, 1e-6);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 1e-3 * k10Gbit);
  // Once identified, a stall at either size is a suspect again.
  est.observe(3e6, link.seconds(3e6) * 20, now += 0.01);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 1e-3 * k10Gbit);
}

TEST(LinkEstimator, AWindowOfOneSizeKeepsTheLatencyItsLineFound) {
  // 5 ms per message on 10 Gbit/s (a loaded host's thread wake-ups on every
  // send): once two sizes identified the line, a window that turns over to
  // one size still knows that most of a message's time is per message. Put
  // on the bytes instead (latency 0), 4 KB would look like 0.8 MB/s, a 16x
  // smaller message would be predicted 16x faster, and the scheduler would
  // compress a link where compressing buys nothing.
  const TrueLink link{5e-3, k10Gbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 8; ++i) {
    est.observe(4e3, link.seconds(4e3), now += 0.01);
    est.observe(64e3, link.seconds(64e3), now += 0.01);
  }
  ASSERT_TRUE(est.estimate().line_identified);
  for (int i = 0; i < 20; ++i) est.observe(4e3, link.seconds(4e3), now += 0.01);
  const LinkEstimate e = est.estimate();
  EXPECT_FALSE(e.line_identified);
  // At most 0.9 of the typical message's time is latency (4.5 ms here).
  EXPECT_NEAR(e.latency_s, 4.5e-3, 0.01e-3);
  EXPECT_NEAR(est.predict(4e3), link.seconds(4e3), 0.01 * link.seconds(4e3));
  EXPECT_NEAR(est.predict(250), link.seconds(250), 0.1 * link.seconds(250));
}

TEST(LinkEstimator, SingleSlowTransferIsIgnored) {
  const TrueLink link{25e-6, k10Gbit};
  Noise noise(0.05, 4);
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(4e6, link.seconds(4e6) * noise(), now += 0.01);
  const double before = est.estimate().bandwidth_Bps;
  est.observe(4e6, link.seconds(4e6) * 20, now += 0.01);  // one stall
  EXPECT_EQ(est.estimate().bandwidth_Bps, before);        // held back as a suspect
  est.observe(4e6, link.seconds(4e6) * noise(), now += 0.01);
  EXPECT_EQ(est.estimate().changes, 0u);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 0.05 * k10Gbit);
}

TEST(LinkEstimator, SlowerSuspectIsReportedAtOnceAndDroppedAsNoise) {
  const TrueLink link{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(4e6, link.seconds(4e6), now += 0.01);
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);
  est.observe(4e6, slow.seconds(4e6), now += 0.01);                              // one transfer at 100 Mbit/s
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 0.01 * k10Gbit);            // the fit waits...
  EXPECT_NEAR(est.estimate().suspect_bandwidth_Bps, k100Mbit, 0.01 * k100Mbit);  // ...the suspect shows now
  est.observe(4e6, link.seconds(4e6), now += 0.01);                              // it was a stall
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);
  EXPECT_EQ(est.estimate().changes, 0u);
}

TEST(LinkEstimator, SuspectRunDelaysTheSuspectBandwidth) {
  const TrueLink link{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator est({.suspect_run = 2});
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(4e6, link.seconds(4e6), now += 0.01);
  est.observe(4e6, slow.seconds(4e6), now += 0.01);
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);  // one suspect: not yet
  est.observe(4e6, slow.seconds(4e6), now += 0.01);
  EXPECT_NEAR(est.estimate().suspect_bandwidth_Bps, k100Mbit, 0.01 * k100Mbit);
  est.observe(4e6, slow.seconds(4e6), now += 0.01);  // the third confirms
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);
  EXPECT_EQ(est.estimate().changes, 1u);
}

// A receiver that posts its receive 50 ms late makes a 3.2 ms send on
// 10 Gbit/s take 53 ms; its receipt says the receive itself took 3.2 ms.
// Slow only by the lateness: set aside, no suspect, nothing to react to.
TEST(LinkEstimator, AReceiverLateByFiftyMillisecondsIsNotASlowLink) {
  const TrueLink link{25e-6, k10Gbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(4e6, link.seconds(4e6), now += 0.01);
  for (int i = 0; i < 5; ++i) est.observe_with_receipt(4e6, 0.05 + link.seconds(4e6), link.seconds(4e6), now += 0.06);
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);
  EXPECT_EQ(est.estimate().changes, 0u);
  EXPECT_EQ(est.estimate().late_receiver, 5u);
  EXPECT_EQ(est.estimate().observed, 21u);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k10Gbit, 0.01 * k10Gbit);
  // The same sends without receipts would have been a drop.
  LinkEstimator blind;
  now = 0;
  for (int i = 0; i < 16; ++i) blind.observe(4e6, link.seconds(4e6), now += 0.01);
  for (int i = 0; i < 3; ++i) blind.observe(4e6, 0.05 + link.seconds(4e6), now += 0.06);
  EXPECT_EQ(blind.estimate().changes, 1u);
}

// The link dropped and the receiver is late as well: its receive time is
// slower than the old fit on its own, so the link's drop shows at once and
// is confirmed, at the receiver's (the link's) time, not the sender's.
TEST(LinkEstimator, ALateReceiverOnADroppedLinkStillShowsTheDrop) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(4e6, fast.seconds(4e6), now += 0.01);
  est.observe_with_receipt(4e6, 0.2 + slow.seconds(4e6), slow.seconds(4e6), now += 0.5);
  EXPECT_NEAR(est.estimate().suspect_bandwidth_Bps, k100Mbit, 0.01 * k100Mbit);
  for (int i = 0; i < 2; ++i) est.observe_with_receipt(4e6, 0.2 + slow.seconds(4e6), slow.seconds(4e6), now += 0.5);
  EXPECT_EQ(est.estimate().changes, 1u);
  EXPECT_EQ(est.estimate().late_receiver, 0u);
  EXPECT_NEAR(est.estimate().bandwidth_Bps, k100Mbit, 0.01 * k100Mbit);
}

// The blind spot, and why it is one-sided: a small message on a link that
// has slowed reaches a late receiver's buffers before it posts, so the
// receipt says its receive took nothing and the sender sets the slow send
// aside. The other end's receiver (the sender above) was early: its
// receipts say it waited longer than the send took, and the drop shows
// there at the first transfer.
TEST(LinkEstimator, AnEagerMessageToALateReceiverHidesADropFromThatEndOnly) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator late_end, early_end;
  double now = 0;
  for (int i = 0; i < 16; ++i) {
    now += 0.01;
    late_end.observe(64e3, fast.seconds(64e3), now);
    early_end.observe(64e3, fast.seconds(64e3), now);
  }
  for (int i = 0; i < 3; ++i) {
    now += 0.05;
    late_end.observe_with_receipt(64e3, slow.seconds(64e3), 2e-6, now);
    early_end.observe_with_receipt(64e3, slow.seconds(64e3), 0.02 + slow.seconds(64e3), now);
  }
  EXPECT_EQ(late_end.estimate().late_receiver, 3u);
  EXPECT_EQ(late_end.estimate().changes, 0u);
  EXPECT_EQ(early_end.estimate().late_receiver, 0u);
  EXPECT_EQ(early_end.estimate().changes, 1u);
  EXPECT_LT(early_end.estimate().bandwidth_Bps, 2 * k100Mbit);
}

// A receiver that was early waited for the sender: its receive time is the
// longer one and says nothing about the link; the send time counts alone,
// as without a receipt (also before there is a fit to judge against).
TEST(LinkEstimator, AnEarlyReceiverLeavesTheSendTime) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator with, without;
  double now = 0;
  for (int i = 0; i < 16; ++i) {
    now += 0.01;
    with.observe_with_receipt(4e6, fast.seconds(4e6), 0.03 + fast.seconds(4e6), now);
    without.observe(4e6, fast.seconds(4e6), now);
  }
  EXPECT_EQ(with.estimate().bandwidth_Bps, without.estimate().bandwidth_Bps);
  with.observe_with_receipt(4e6, slow.seconds(4e6), slow.seconds(4e6) + 0.1, now += 0.5);
  EXPECT_NEAR(with.estimate().suspect_bandwidth_Bps, k100Mbit, 0.01 * k100Mbit);
  EXPECT_EQ(with.estimate().late_receiver, 0u);
}

// After a drop, the sender compresses: its next messages are 32x smaller,
// a size a one-size fit cannot judge. The suspects' own line explains them,
// so they confirm the drop (it does not wait for more full-size transfers).
TEST(LinkEstimator, CompressedMessagesOnASlowedLinkConfirmTheDrop) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(1e6, fast.seconds(1e6), now += 0.01);
  ASSERT_FALSE(est.estimate().line_identified);
  est.observe(1e6, slow.seconds(1e6), now += 0.1);
  EXPECT_GT(est.estimate().suspect_bandwidth_Bps, 0);
  est.observe(32e3, slow.seconds(32e3), now += 0.01);
  EXPECT_GT(est.estimate().suspect_bandwidth_Bps, 0);  // still suspected: one more suspect
  EXPECT_EQ(est.estimate().changes, 0u);
  est.observe(32e3, slow.seconds(32e3), now += 0.01);
  EXPECT_EQ(est.estimate().changes, 1u);
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);  // confirmed: the fit has it
  EXPECT_NEAR(est.predict(32e3), slow.seconds(32e3), 0.1 * slow.seconds(32e3));
}

// A compressed message as fast as the old link was shows the slow transfer
// before it was noise: smaller messages are never slower per byte.
TEST(LinkEstimator, ASmallMessageAsFastAsTheOldLinkEndsASlowerRun) {
  const TrueLink fast{25e-6, k10Gbit}, slow{25e-6, k100Mbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(1e6, fast.seconds(1e6), now += 0.01);
  est.observe(1e6, slow.seconds(1e6), now += 0.1);
  ASSERT_GT(est.estimate().suspect_bandwidth_Bps, 0);
  est.observe(32e3, fast.seconds(32e3), now += 0.01);
  EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0);
  for (int i = 0; i < 2; ++i) est.observe(1e6, slow.seconds(1e6), now += 0.1);
  EXPECT_EQ(est.estimate().changes, 0u);  // the run started again: two suspects, not three
}

// A 4x stall, then the sender compresses (32x smaller messages) on a link
// that never changed: the old fit explains them (about twice their time
// apart, the suspects' line 2x the other way is farther in log-time), so
// the stall ends as noise instead of being confirmed by them. One-size fit
// (no probes, as in a busy gossip link) and a fit through two sizes alike.
TEST(LinkEstimator, AStallFollowedByCompressedMessagesIsNoise) {
  const TrueLink link{25e-6, k10Gbit};
  for (const bool two_sizes : {false, true}) {
    LinkEstimator est;
    double now = 0;
    for (int i = 0; i < 16; ++i) {
      const double bytes = two_sizes && i % 2 ? 250e3 : 1e6;
      est.observe(bytes, link.seconds(bytes), now += 0.01);
    }
    ASSERT_EQ(est.estimate().line_identified, two_sizes);
    const double before = est.estimate().bandwidth_Bps;
    est.observe(1e6, 4 * link.seconds(1e6), now += 0.01);
    EXPECT_GT(est.estimate().suspect_bandwidth_Bps, 0) << "two sizes: " << two_sizes;
    for (int i = 0; i < 4; ++i) est.observe(32e3, link.seconds(32e3), now += 0.01);
    EXPECT_EQ(est.estimate().suspect_bandwidth_Bps, 0) << "two sizes: " << two_sizes;
    EXPECT_EQ(est.estimate().changes, 0u) << "two sizes: " << two_sizes;
    EXPECT_GT(est.estimate().bandwidth_Bps, 0.5 * before) << "two sizes: " << two_sizes;
  }
}

// Stalls a window of transfers apart are not one run.
TEST(LinkEstimator, ScatteredStallsDoNotAddUpToAChange) {
  const TrueLink link{25e-6, k10Gbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 16; ++i) est.observe(1e6, link.seconds(1e6), now += 0.01);
  est.observe(1e6, 20 * link.seconds(1e6), now += 0.01);
  // Probes agree with the fit but are too small to end the run by size.
  for (int i = 0; i < 15; ++i) est.observe(64, link.seconds(64), now += 0.01);
  EXPECT_GT(est.estimate().suspect_bandwidth_Bps, 0);  // still pending (15 transfers later)...
  est.observe(1e6, 20 * link.seconds(1e6), now += 0.01);
  est.observe(1e6, 20 * link.seconds(1e6), now += 0.01);
  EXPECT_EQ(est.estimate().changes, 0u);  // ...but expired: two suspects, not three
}

TEST(LinkEstimator, SuspectsInOppositeDirectionsAreNoChange) {
  const TrueLink link{25e-6, k10Gbit};
  LinkEstimator est;
  double now = 0;
  for (int i = 0; i < 8; ++i) est.observe(4e6, link.seconds(4e6), now += 0.01);
  const double before = est.estimate().bandwidth_Bps;
  // Slow, fast, slow, fast: jitter both ways, never three in a row one way.
  for (int i = 0; i < 8; ++i) est.observe(4e6, link.seconds(4e6) * (i % 2 ? 10 : 0.1), now += 0.01);
  EXPECT_EQ(est.estimate().changes, 0u);
  EXPECT_EQ(est.estimate().bandwidth_Bps, before);  // none entered the window
}

TEST(LinkEstimator, NeedsProbeWhenIdle) {
  LinkEstimator est({.probe_interval_s = 1.0});
  EXPECT_TRUE(est.needs_probe(0));  // never measured
  est.observe(64, 30e-6, 10.0);
  EXPECT_FALSE(est.needs_probe(10.5));
  EXPECT_TRUE(est.needs_probe(11.5));
}

TEST(LinkEstimator, RejectsImpossibleSamples) {
  LinkEstimator est;
  EXPECT_THROW(est.observe(-1, 1e-3, 0), InvariantError);
  EXPECT_THROW(est.observe(100, -1e-3, 0), InvariantError);
  EXPECT_THROW(est.observe_with_receipt(100, 1e-3, -1e-3, 0), InvariantError);
  EXPECT_THROW(est.observe_with_receipt(-1, 1e-3, 1e-3, 0), InvariantError);
  EXPECT_THROW(est.observe_with_receipt(100, std::nan(""), 1e-3, 0), InvariantError);
  EXPECT_EQ(est.estimate().observed, 0u);
  EXPECT_THROW(LinkEstimator({.window = 4, .change_run = 5}), InvariantError);
}

TEST(ComputeEstimator, MedianIgnoresOccasionalSlowSteps) {
  ComputeEstimator compute(5);
  EXPECT_EQ(compute.seconds_per_step(), 0);
  for (double s : {0.010, 0.011, 0.250, 0.009, 0.010}) compute.observe(s);  // 0.25: an evaluation pass
  EXPECT_DOUBLE_EQ(compute.seconds_per_step(), 0.010);
  for (int i = 0; i < 5; ++i) compute.observe(0.020);  // the window slides: a slower phase shows
  EXPECT_DOUBLE_EQ(compute.seconds_per_step(), 0.020);
  EXPECT_EQ(compute.samples(), 5u);
}

}  // namespace
}  // namespace murmur::gossip::schedule
