// The metrics line of one scheduler decision, with the measurements behind
// it, for the JSON-lines metrics stream:
//
//   {"event":"schedule","round":12,"period":1,"proposed_period":1,
//    "ratio":0.0078125,"changed":true,"reason":"link 3: ratio 1 -> 0.0078 ...",
//    "predicted_comm_s":0.0031,"compute_budget_s":0.01,"compute_s_per_step":0.01,
//    "floor_ratio":0.001,"period_cap":16,"guard_stepped_back":false,
//    "consensus_distance":0.02,"consensus_reference":0.015,
//    "parameters":1000000,"bytes_per_kept_value":6,"per_link":true,
//    "links":[{"peer":1,"ratio":1,"predicted_s":0.0032,"latency_s":2.5e-05,
//              "bandwidth_Bps":1.25e9,"samples":16,"identified":true,
//              "message_bytes":4000016}, ...]}
//
// Unknown measurements are written as they are in the inputs (bandwidth 0,
// distance -1), never dropped, so a reader sees what the policy saw.
// Thread-safe (no state).
#pragma once

#include <nlohmann/json.hpp>

#include "gossip/schedule/link_estimator.h"
#include "gossip/schedule/policy.h"

namespace murmur::gossip::schedule {

nlohmann::json to_json(const ScheduleDecision& decision, const ScheduleInputs& inputs);
// One link's estimate, for logs of the estimator alone.
nlohmann::json to_json(const LinkEstimate& estimate);

}  // namespace murmur::gossip::schedule
