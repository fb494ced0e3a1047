// The command-line flags of murmur::GossipOptions, declared once (name,
// help text, check, default shown from the struct) for murmur-peer,
// murmur-sim and the benchmarks. A program picks the flags it honours:
//
//   murmur::GossipOptions g;
//   add_gossip_flags(app, g);                                        // all of them
//   add_gossip_flags(app, g, kGossipAll & ~(kAlgorithmFlag | kTopologySeedFlag));  // murmur-sim
//
// Lives in murmur::gossip_cli, a small library of its own, so that CLI11
// stays out of murmur::gossip's link interface (embedders of murmur::peer
// never see it). The options bind to `options` by reference: it must outlive
// app.parse(). Not thread-safe (CLI11 apps are not).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "murmur/gossip_options.h"

namespace murmur::gossip {

// Groups of flags (gossip_flags.cc has each group's flags; a new flag joins
// the group it goes with, so that every program that honours the group
// gets it).
enum GossipFlags : unsigned {
  kAlgorithmFlag = 1u << 0,     // --algorithm
  kTopologyFlags = 1u << 1,     // the graph: --topology, --degree
  kTopologySeedFlag = 1u << 2,  // --topology-seed
  kCompressorFlag = 1u << 3,    // --compressor (alias --compress)
  kPeriodFlag = 1u << 4,        // how often ranks communicate: --period, ...
  kGammaFlag = 1u << 5,         // --gamma
  kScheduleFlags = 1u << 6,     // the scheduler: --schedule, --schedule-interval
  // The gradient methods' knobs: --servers, --topk-density.
  kGradientMethodFlags = 1u << 7,
  // How the gradient methods cut tensors: --bytescheduler-partition,
  // --bytescheduler-credit, --ps-partition (murmur-sim models these too).
  kPartitionFlags = 1u << 8,
  kGossipAll = (1u << 9) - 1,
};

// Adds the flags in `which` to `app`, in the option group `group`.
void add_gossip_flags(CLI::App& app, GossipOptions& options, unsigned which = kGossipAll,
                      const std::string& group = "Gossip");

}  // namespace murmur::gossip
