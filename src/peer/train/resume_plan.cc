#include "peer/train/resume_plan.h"

namespace murmur::peer::train {

namespace {

std::string members_text(const std::vector<int>& members) {
  std::string s;
  for (int m : members) s += (s.empty() ? "" : ",") + std::to_string(m);
  return "{" + s + "}";
}

}  // namespace

ResumePlan plan_resume(const Checkpoint& c, const std::string& path, const ResumeTarget& now) {
  if (c.model != now.model || c.parameters.size() != now.parameters || c.world_size != now.world_size ||
      c.rank != now.rank) {
    throw CheckpointError("checkpoint " + path + " is of rank " + std::to_string(c.rank) + " of " +
                          std::to_string(c.world_size) + ", model " + c.model + " (" +
                          std::to_string(c.parameters.size()) + " parameters); this run is rank " +
                          std::to_string(now.rank) + " of " + std::to_string(now.world_size) + ", model " + now.model +
                          " (" + std::to_string(now.parameters) + " parameters)");
  }
  ResumePlan plan;
  if (c.version < 2) {
    plan.note = "checkpoint " + path + " is version " + std::to_string(c.version) +
                ": parameters and momentum restored, the " + now.algorithm + " algorithm's state restarts";
    return plan;
  }
  if (c.algorithm != now.algorithm) {
    throw CheckpointError("checkpoint " + path + " holds the state of algorithm " + c.algorithm + ", this run is " +
                          now.algorithm + ": resume with --algorithm " + c.algorithm + " or start without --resume");
  }
  plan.algorithm_state = true;
  if (c.view_members == now.view_members) {
    plan.schedule_state = true;
    plan.note = "checkpoint " + path + ": parameters, momentum, data position, " + now.algorithm +
                " algorithm state and scheduler state restored (view " + std::to_string(c.view_generation) +
                ", members " + members_text(c.view_members) + ")";
    return plan;
  }
  plan.other_view = true;
  plan.note = "checkpoint " + path + " was saved in view " + std::to_string(c.view_generation) + " (members " +
              members_text(c.view_members) + "), resuming onto view " + std::to_string(now.view_generation) +
              " (members " + members_text(now.view_members) + "): parameters, momentum and data position restored, " +
              now.algorithm +
              " algorithm state restored for the new view (neighbour state re-derived), the "
              "scheduler restarts";
  return plan;
}

}  // namespace murmur::peer::train
