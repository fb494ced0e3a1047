#include "gossip/schedule/decision_record.h"

namespace murmur::gossip::schedule {

nlohmann::json to_json(const ScheduleDecision& d, const ScheduleInputs& in) {
  nlohmann::json links = nlohmann::json::array();
  for (const LinkView& l : in.links) {
    const auto ratio = d.link_ratio.find(l.peer);
    const auto predicted = d.link_predicted_s.find(l.peer);
    nlohmann::json link = {{"peer", l.peer},
                           {"latency_s", l.latency_s},
                           {"bandwidth_Bps", l.bandwidth_Bps},
                           {"samples", l.samples},
                           {"identified", l.identified},
                           {"suspect", l.suspect},
                           {"late_receiver", l.late_receiver}};
    if (ratio != d.link_ratio.end()) {
      link["ratio"] = ratio->second;
      link["message_bytes"] = message_bytes(in, ratio->second);
    }
    if (predicted != d.link_predicted_s.end()) link["predicted_s"] = predicted->second;
    if (const auto trial = d.explore_link_ratio.find(l.peer); trial != d.explore_link_ratio.end())
      link["explore_ratio"] = trial->second;
    links.push_back(std::move(link));
  }
  return {{"event", "schedule"},
          {"round", d.round},
          {"period", d.period},
          {"proposed_period", d.proposed_period},
          {"ratio", d.ratio},
          {"explore_ratio", d.explore_ratio},
          {"changed", d.changed},
          {"reason", d.reason},
          {"predicted_comm_s", d.predicted_comm_s},
          {"compute_budget_s", d.compute_budget_s},
          {"compute_s_per_step", in.compute_s_per_step},
          {"floor_ratio", d.floor_ratio},
          {"period_cap", d.period_cap},
          {"guard_stepped_back", d.guard_stepped_back},
          {"consensus_distance", in.consensus_distance},
          {"consensus_reference", in.consensus_reference},
          {"parameters", in.parameters},
          {"bytes_per_kept_value", in.bytes_per_kept_value},
          {"per_link", in.per_link},
          {"links", std::move(links)}};
}

nlohmann::json to_json(const LinkEstimate& e) {
  nlohmann::json j = {{"latency_s", e.latency_s},
                      {"bandwidth_Bps", e.bandwidth_Bps},
                      {"samples", e.samples},
                      {"line_identified", e.line_identified},
                      {"suspect_bandwidth_Bps", e.suspect_bandwidth_Bps},
                      {"observed", e.observed},
                      {"changes", e.changes},
                      {"late_receiver", e.late_receiver}};
  j["last_change_time"] = e.last_change_time ? nlohmann::json(*e.last_change_time) : nlohmann::json(nullptr);
  return j;
}

}  // namespace murmur::gossip::schedule
