// The decisions made once: the algorithm registry, the gossip options and
// their flags, the schedule applied to an algorithm's options, and a
// compressor spec parsed once.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gossip/algorithm/gossip_flags.h"
#include "gossip/algorithm/gossip_setup.h"
#include "gossip/algorithm/registry.h"
#include "gossip/compress/compressor.h"
#include "gossip/schedule/errors.h"

namespace murmur::gossip {
namespace {

TEST(AlgorithmRegistry, NamesAreUniqueAndFound) {
  std::set<std::string> seen;
  for (const AlgorithmInfo& a : algorithms()) {
    EXPECT_TRUE(seen.insert(std::string(a.name)).second) << a.name;
    EXPECT_EQ(find_algorithm(a.name), &a);
    EXPECT_NE(a.make, nullptr) << a.name;
    EXPECT_FALSE(a.summary.empty()) << a.name;
  }
  EXPECT_EQ(algorithm_names(),
            (std::vector<std::string>{"dpsgd", "choco", "sgp", "adpsgd", "allreduce", "topk-allreduce", "local-sgd",
                                      "bsp-a2a", "wfbp-a2a", "mg-wfbp", "bytescheduler-a2a", "bsp-ps", "wfbp-ps",
                                      "bytescheduler-ps", "signsgd", "topk-sgd"}));
  EXPECT_EQ(find_algorithm("gossip"), nullptr);
  try {
    algorithm_info("gossip");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'gossip'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dpsgd, choco"), std::string::npos) << e.what();
  }
}

TEST(AlgorithmRegistry, TraitsAreConsistent) {
  for (const AlgorithmInfo& a : algorithms()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_NE(a.needs_topology, a.centralized);     // gossip on a graph, or centralized
    EXPECT_TRUE(a.checkpoint_state & kParameters);  // every algorithm's state includes the model
    EXPECT_EQ(a.simulable, a.not_simulable_because.empty());
    EXPECT_TRUE(!a.tunes_period || a.has_rounds);  // a period counts rounds
    EXPECT_TRUE(!a.tunes_ratio || a.takes_compressor);
    EXPECT_TRUE(!a.static_topology || a.needs_topology);
  }
  EXPECT_EQ(algorithm_list([](const AlgorithmInfo& a) { return a.simulable; }, " or "),
            "dpsgd, choco, sgp, allreduce, topk-allreduce or local-sgd");
  EXPECT_EQ(algorithm_list([](const AlgorithmInfo& a) { return a.takes_compressor; }, " and "),
            "choco and topk-allreduce");
  EXPECT_EQ(algorithm_info("choco").on_membership_change, MembershipChange::kResyncNeighbourState);
  EXPECT_EQ(algorithm_info("sgp").checkpoint_state, kParameters | kPushSumWeight);
  EXPECT_EQ(algorithm_info("topk-allreduce").averages, Averages::kModelUpdates);
  // allreduce averages the parameters after the optimizer step, bsp-a2a the
  // gradients before it: both kept, each named for what it averages.
  EXPECT_EQ(algorithm_info("allreduce").averages, Averages::kModels);
  for (const char* name : {"bsp-a2a", "wfbp-a2a", "mg-wfbp", "bytescheduler-a2a", "bsp-ps", "wfbp-ps",
                           "bytescheduler-ps", "signsgd", "topk-sgd"}) {
    EXPECT_EQ(algorithm_info(name).averages, Averages::kGradients) << name;
    EXPECT_EQ(algorithm_info(name).on_membership_change, MembershipChange::kReaverageModels) << name;
  }
}

TEST(GossipOptions, GradientMethodsRefuseAPeriodAndASchedule) {
  GossipOptions g;
  g.algorithm = "wfbp-a2a";
  g.period = 4;
  try {
    check_gossip_options(g);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--period 4"), std::string::npos) << e.what();
  }
  g.period = 1;
  g.schedule = "adaptive";
  EXPECT_THROW(check_gossip_options(g), std::invalid_argument);
}

TEST(GossipOptions, OneSetOfDefaults) {
  // The public PeerConfig, the algorithms' options and the simulator all
  // start from GossipOptions' defaults (they derive from it or embed it).
  const GossipOptions g;
  EXPECT_EQ(g.algorithm, "choco");
  EXPECT_EQ(g.compressor, "topk:0.01");
  EXPECT_EQ(g.period, 1);
  EXPECT_EQ(g.schedule, "fixed");
}

TEST(GossipOptions, ScheduleAppliedOnce) {
  GossipOptions g;
  g.period = 3;
  g.gamma = 0.5;
  g.seed = 42;
  const auto fixed = check_gossip_options(g);
  AlgorithmOptions o = algorithm_options(g, fixed);
  EXPECT_EQ(o.period, 3);
  EXPECT_EQ(o.gamma, 0.5);
  // No field of AlgorithmOptions hides one of GossipOptions: the job's seed
  // reaches the algorithm (adpsgd's partner choice).
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.max_ratio, 0);
  EXPECT_FALSE(o.receipts);

  g.schedule = "adaptive:max_ratio=0.5";
  const auto adaptive = check_gossip_options(g);
  o = algorithm_options(g, adaptive);
  EXPECT_DOUBLE_EQ(o.max_ratio, 0.5);
  EXPECT_EQ(o.receipts, adaptive.receipts);
}

TEST(GossipOptions, CheckedBeforeJoining) {
  GossipOptions g;
  g.algorithm = "adpsgd";
  g.schedule = "adaptive";
  EXPECT_THROW(check_gossip_options(g), std::invalid_argument);  // no rounds to schedule
  g.schedule = "fixed";
  EXPECT_NO_THROW(check_gossip_options(g));
  g.period = 0;
  EXPECT_THROW(check_gossip_options(g), std::invalid_argument);
  g = GossipOptions{};
  g.algorithm = "gossip";
  EXPECT_THROW(check_gossip_options(g), std::invalid_argument);
  g = GossipOptions{};
  g.schedule = "adaptive:bogus=1";
  EXPECT_THROW(check_gossip_options(g), schedule::ScheduleError);
}

TEST(GossipOptions, TopologyOnlyWhereNeeded) {
  GossipOptions g;
  g.topology = "ring";
  auto ring = make_gossip_topology(g, 6);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->size(), 6);
  g.algorithm = "allreduce";
  EXPECT_EQ(make_gossip_topology(g, 6), nullptr);
}

TEST(GossipFlags, DeclaredOnce) {
  GossipOptions g;
  CLI::App app;
  add_gossip_flags(app, g);
  app.parse("--algorithm sgp --topology ring --compress randk:0.1 --period 2 --gamma 0.25 --schedule-interval 7",
            /*program_name_included=*/false);
  EXPECT_EQ(g.algorithm, "sgp");
  EXPECT_EQ(g.topology, "ring");
  EXPECT_EQ(g.compressor, "randk:0.1");
  EXPECT_EQ(g.period, 2);
  EXPECT_EQ(g.gamma, 0.25);
  EXPECT_EQ(g.schedule_interval, 7);
  EXPECT_NE(app.help().find("compressor for choco and topk-allreduce"), std::string::npos);

  for (const char* bad : {"--gamma=0", "--gamma=1.5", "--period=0", "--schedule-interval=0"}) {
    GossipOptions h;
    CLI::App other;
    add_gossip_flags(other, h);
    EXPECT_THROW(other.parse(bad, /*program_name_included=*/false), CLI::ValidationError) << bad;
  }
}

TEST(GossipFlags, GossipWarmupGoesWithThePeriod) {
  GossipOptions g;
  CLI::App app;
  add_gossip_flags(app, g, kPeriodFlag);
  app.parse("--period 4 --gossip-warmup 100", /*program_name_included=*/false);
  EXPECT_EQ(g.period, 4);
  EXPECT_EQ(g.warmup_steps, 100);
  EXPECT_EQ(GossipOptions{}.warmup_steps, 0);  // off unless asked for
  GossipOptions h;
  CLI::App other;
  add_gossip_flags(other, h);
  EXPECT_THROW(other.parse("--gossip-warmup=-1", /*program_name_included=*/false), CLI::ValidationError);
  // Ranks must agree on it: it decides which steps communicate.
  bool agreed = false;
  visit_agreed_fields(g,
                      [&](const char* name, const auto&) { agreed = agreed || std::string(name) == "warmup steps"; });
  EXPECT_TRUE(agreed);
}

TEST(GossipFlags, GradientMethodKnobs) {
  GossipOptions g;
  CLI::App app;
  add_gossip_flags(app, g, kGradientMethodFlags | kPartitionFlags);
  EXPECT_EQ(g.ps_servers, 0);               // every member serves
  EXPECT_EQ(g.ps_partition, 1024000);       // BytePS's 4,096,000 bytes
  EXPECT_DOUBLE_EQ(g.topk_density, 0.001);  // the survey's
  app.parse("--servers 2 --topk-density 0.01 --ps-partition 5000", /*program_name_included=*/false);
  EXPECT_EQ(g.ps_servers, 2);
  EXPECT_DOUBLE_EQ(g.topk_density, 0.01);
  EXPECT_EQ(g.ps_partition, 5000);
  for (const char* bad : {"--servers=-1", "--topk-density 0", "--topk-density 1.5", "--ps-partition 0"}) {
    GossipOptions h;
    CLI::App other;
    add_gossip_flags(other, h, kGradientMethodFlags | kPartitionFlags);
    EXPECT_THROW(other.parse(bad, /*program_name_included=*/false), CLI::ValidationError) << bad;
  }
  // Ranks must agree on them: they decide what each rank sends where.
  int agreed = 0;
  visit_agreed_fields(g, [&](const char* name, const auto&) {
    agreed +=
        std::string(name) == "servers" || std::string(name) == "topk density" || std::string(name) == "ps partition";
  });
  EXPECT_EQ(agreed, 3);
}

TEST(GossipFlags, ProgramsPickTheirs) {
  GossipOptions g;
  CLI::App app;
  add_gossip_flags(app, g, kGammaFlag);
  EXPECT_EQ(app.get_option_no_throw("--algorithm"), nullptr);
  EXPECT_NE(app.get_option_no_throw("--gamma"), nullptr);
}

TEST(CompressorSpec, ParsedOnce) {
  const CompressorSpec topk = parse_compressor_spec("topk:0.01");
  EXPECT_EQ(topk.kind, CompressorSpec::Kind::kTopk);
  EXPECT_DOUBLE_EQ(topk.ratio, 0.01);
  EXPECT_TRUE(topk.sparse());
  EXPECT_EQ(topk.text(), "topk:0.01");
  EXPECT_EQ(topk.with_ratio(0.015625).text(), "topk:0.015625");
  EXPECT_EQ(parse_compressor_spec("randk:0.5").with_ratio(1).text(), "randk:1");
  EXPECT_FALSE(parse_compressor_spec("qsgd:4").sparse());
  EXPECT_EQ(parse_compressor_spec("qsgd:4").text(), "qsgd:4");
  EXPECT_EQ(parse_compressor_spec("powersgd:2").param, 2u);
  for (const char* spec : {"identity", "fp16", "bf16", "sign"}) EXPECT_EQ(parse_compressor_spec(spec).text(), spec);
  EXPECT_THROW(parse_compressor_spec("topk:2"), BadCompressorSpec);
  EXPECT_THROW(parse_compressor_spec("fp16:1"), BadCompressorSpec);
  EXPECT_THROW(parse_compressor_spec("zip"), BadCompressorSpec);
  // An unknown name is called unknown, not a kind missing its argument.
  try {
    parse_compressor_spec("none");
    ADD_FAILURE() << "'none' parsed";
  } catch (const BadCompressorSpec& e) {
    EXPECT_NE(std::string(e.what()).find("unknown compressor 'none'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_compressor_spec("topk"), BadCompressorSpec);
  // The spec and the text build the same compressor.
  EXPECT_EQ(make_compressor(topk, Feedback::kNone)->name(), make_compressor("topk:0.01", Feedback::kNone)->name());
}

}  // namespace
}  // namespace murmur::gossip
