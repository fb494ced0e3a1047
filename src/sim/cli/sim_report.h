// murmur-sim's output: one row per (model, network, method, GPU count), as
// CSV, Markdown or an aligned text table (bench/sim/plot_speedup.py draws
// the CSV). Pure functions of their inputs; thread-safe.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace murmur::sim::cli {

struct SimRow {
  std::string model;
  std::string network;
  std::string method;
  int gpus = 0;
  double samples_per_s = 0;
  double speedup = 0;
  double iteration_s = 0;
  double compute_s = 0;
  double comm_s = 0;          // busy time of communication
  double overlap_s = 0;       // communication hidden behind compute
  double exposed_s = 0;       // iteration - compute
  double link_bytes = 0;      // per iteration: each NIC (paper methods) or the busiest link (gossip)
  std::string configuration;  // what ran, e.g. "choco topk:0.0100 exponential H=2"
};

// The --paper-table columns only: model,network,method,gpus,samples_per_s.
void write_paper_csv(std::ostream& out, const std::vector<SimRow>& rows);
// Every column.
void write_csv(std::ostream& out, const std::vector<SimRow>& rows);
void write_markdown(std::ostream& out, const std::vector<SimRow>& rows);
void write_text(std::ostream& out, const std::vector<SimRow>& rows);

}  // namespace murmur::sim::cli
