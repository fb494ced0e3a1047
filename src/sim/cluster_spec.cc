// ClusterSpec::slowdown and the cluster file parser. The format, its rules
// and its error messages are in docs/sim-files.md.
#include "sim/cluster_spec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/line_reader.h"
#include "sim/cost/network_preset.h"

namespace murmur::sim {

double ClusterSpec::slowdown(int rank) const {
  for (const auto& s : stragglers) {
    if (s.rank == rank) return s.slowdown;
  }
  return 1;
}

double ClusterSpec::host_contention() const {
  if (peers_per_host == 0 || cores_per_host == 0) return 1;
  const int peers = std::min(peers_per_host, gpus);
  return std::max(1.0, static_cast<double>(peers) / cores_per_host);
}

namespace {

constexpr long long kMaxGpus = 1 << 20;
constexpr const char* kDefaultNetwork = "10gbe-tcp";
constexpr LineFormat kClusterFormat{.comment = '#', .raise = &raise_as<ClusterError>};

struct Unit {
  const char* suffix;
  double factor;  // to seconds, or to bytes per second
};
// A suffix that ends another comes before it ("ms" before "s", "GB/s"
// before "B/s"). Case matters: Mbit/s and MB/s differ eightfold.
constexpr Unit kLatencyUnits[] = {{"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"s", 1}};
constexpr Unit kBandwidthUnits[] = {{"Kbit/s", 1e3 / 8}, {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8}, {"bit/s", 1.0 / 8},
                                    {"KB/s", 1e3},       {"MB/s", 1e6},       {"GB/s", 1e9},       {"B/s", 1}};

template <std::size_t N>
std::string unit_list(const Unit (&units)[N]) {
  std::vector<std::string_view> suffixes;
  for (const auto& u : units) suffixes.push_back(u.suffix);
  return fmt::format("{}", fmt::join(suffixes, ", "));
}

// "25us" -> 25e-6; nullopt unless the whole text is a finite number and a unit.
template <std::size_t N>
std::optional<double> quantity(const std::string& text, const Unit (&units)[N]) {
  for (const auto& u : units) {
    const std::size_t n = std::strlen(u.suffix);
    if (text.size() <= n || text.compare(text.size() - n, n, u.suffix) != 0) continue;
    double v = 0;
    if (!parse_number(std::string_view(text).substr(0, text.size() - n), v)) return std::nullopt;
    return v * u.factor;
  }
  return std::nullopt;
}

struct LinkLine {
  int line = 0;  // 0: absent
  std::optional<double> latency_s;
  std::optional<double> bandwidth_Bps;
  std::optional<double> busy_latency_s;
  std::optional<double> concurrent_message_s;
};

class ClusterParser {
 public:
  explicit ClusterParser(LineReader& reader) : reader_(reader) {}

  [[noreturn]] void fail(int line, const std::string& reason) const { reader_.fail(line, reason); }

  ClusterSpec parse() {
    for (Line line; reader_.next(line);) parse_line(line.words(), line.number);
    return finish(reader_.lines_read());
  }

 private:
  void parse_line(const std::vector<std::string>& words, int line) {
    const std::string& key = words[0];
    if (key == "gpus") {
      spec_.gpus = count(single(words, line, gpus_line_, "gpus N"), "gpus", line);
    } else if (key == "gpus-per-node") {
      spec_.gpus_per_node = count(single(words, line, per_node_line_, "gpus-per-node N"), "gpus-per-node", line);
    } else if (key == "network") {
      network_ = single(words, line, network_line_, "network NAME");
      try {
        cost::network_preset(network_);
      } catch (const ClusterError& e) {
        fail(line, e.reason());
      }
    } else if (key == "inter-node") {
      parse_link(words, line, inter_);
    } else if (key == "intra-node") {
      parse_link(words, line, intra_);
    } else if (key == "straggler") {
      parse_straggler(words, line);
    } else if (key == "link-episode") {
      parse_episode(words, line);
    } else if (key == "host") {
      parse_host(words, line);
    } else if (key == "stack") {
      const std::string& stack = single(words, line, stack_line_, "stack paper|murmur");
      if (stack != "paper" && stack != "murmur")
        fail(line, fmt::format("unknown stack '{}' (known: paper, murmur)", stack));
      spec_.stack = stack == "murmur" ? Stack::kMurmur : Stack::kPaper;
    } else {
      fail(line, fmt::format("unknown keyword '{}'; expected gpus, gpus-per-node, network, inter-node, intra-node, "
                             "straggler, link-episode, host or stack",
                             key));
    }
  }

  // Order-free: the preset first, then the link lines' keys over it, then
  // the straggler ranks against the final GPU count.
  ClusterSpec finish(int last_line) {
    if (gpus_line_ == 0) fail(last_line, "no 'gpus N' line; say how many GPUs to simulate");
    const std::string preset = network_line_ ? network_ : kDefaultNetwork;
    cost::apply_network_preset(spec_, preset);
    for (auto [link, given, name] :
         {std::tuple{&spec_.inter_node, &inter_, "inter-node"}, std::tuple{&spec_.intra_node, &intra_, "intra-node"}}) {
      if (given->line == 0) continue;
      // A busy latency alone leaves the preset's links (and, on stack
      // paper, its calibrated constants) as they are.
      if (given->latency_s || given->bandwidth_Bps) spec_.network = "custom";
      if (given->latency_s) link->latency_s = *given->latency_s;
      if (given->bandwidth_Bps) link->bandwidth_Bps = *given->bandwidth_Bps;
      // busy-latency and concurrent-message are checked here, not at their
      // keys: the latency they are held against may come from the preset or
      // stand later on the line.
      const std::string latency_from = given->latency_s ? "given on the line" : "network " + preset + "'s";
      if (given->busy_latency_s) {
        if (*given->busy_latency_s < link->latency_s) {
          fail(given->line,
               fmt::format("{} busy-latency {:g} us is below its latency {:g} us ({}); a busy host only adds to a "
                           "message's cost",
                           name, *given->busy_latency_s * 1e6, link->latency_s * 1e6, latency_from));
        }
        link->busy_latency_s = *given->busy_latency_s;
      }
      if (given->concurrent_message_s) {
        if (*given->concurrent_message_s > link->latency_s) {
          fail(given->line,
               fmt::format("{} concurrent-message {:g} us is above its latency {:g} us ({}); a message posted beside "
                           "others costs no more than one alone",
                           name, *given->concurrent_message_s * 1e6, link->latency_s * 1e6, latency_from));
        }
        link->concurrent_message_s = *given->concurrent_message_s;
      }
    }
    for (const auto& s : spec_.stragglers) {
      if (s.rank >= spec_.gpus) {
        fail(straggler_lines_[s.rank], fmt::format("straggler rank {} is out of range: 'gpus {}' has ranks 0 to {}",
                                                   s.rank, spec_.gpus, spec_.gpus - 1));
      }
    }
    for (std::size_t i = 0; i < spec_.episodes.size(); ++i) {
      LinkEpisode& e = spec_.episodes[i];
      if (std::max(e.a, e.b) >= spec_.gpus)
        fail(episode_lines_[i], fmt::format("link-episode joins rank {} but 'gpus {}' has ranks 0 to {}",
                                            std::max(e.a, e.b), spec_.gpus, spec_.gpus - 1));
      // Without latency=, the episode keeps the latency of the link it replaces.
      if (e.link.latency_s < 0)
        e.link.latency_s =
            spec_.node_of(e.a) == spec_.node_of(e.b) ? spec_.intra_node.latency_s : spec_.inter_node.latency_s;
    }
    return std::move(spec_);
  }

  const std::string& single(const std::vector<std::string>& words, int line, int& seen_line, const std::string& usage) {
    if (seen_line != 0) {
      fail(line, fmt::format("'{}' given twice (first on line {})", words[0], seen_line));
    }
    if (words.size() != 2) {
      fail(line, fmt::format("{}; expected '{}'", words.size() < 2 ? "missing value" : "too many values", usage));
    }
    seen_line = line;
    return words[1];
  }

  int count(const std::string& s, const std::string& what, int line) const {
    return static_cast<int>(reader_.whole_number(line, s, what, 1, kMaxGpus));
  }

  // KEY=VALUE words after the keyword, each key known and given once.
  std::map<std::string, std::string> keys(const std::vector<std::string>& words, int line,
                                          const std::vector<std::string>& known, const std::string& usage) const {
    std::map<std::string, std::string> found;
    if (words.size() < 2) fail(line, fmt::format("missing value; expected '{}'", usage));
    for (std::size_t i = 1; i < words.size(); ++i) {
      const auto eq = words[i].find('=');
      const std::string key = words[i].substr(0, eq);
      bool is_known = false;
      for (const auto& k : known) is_known = is_known || k == key;
      if (eq == std::string::npos || !is_known) {
        fail(line, fmt::format("unknown key '{}' in '{}'; expected '{}'", words[i], words[0], usage));
      }
      if (eq + 1 == words[i].size()) fail(line, fmt::format("missing value after '{}='", key));
      if (!found.emplace(key, words[i].substr(eq + 1)).second) fail(line, fmt::format("'{}=' given twice", key));
    }
    return found;
  }

  void parse_link(const std::vector<std::string>& words, int line, LinkLine& link) {
    if (link.line != 0) {
      fail(line, fmt::format("'{}' given twice (first on line {})", words[0], link.line));
    }
    const std::string usage = fmt::format("{} latency=T bandwidth=B [busy-latency=T] [concurrent-message=T]", words[0]);
    auto given = keys(words, line, {"latency", "bandwidth", "busy-latency", "concurrent-message"}, usage);
    link.line = line;
    if (given.count("latency")) {
      link.latency_s = quantity(given["latency"], kLatencyUnits);
      if (!link.latency_s || *link.latency_s < 0) {
        fail(line, fmt::format("latency '{}' is not a number >= 0 with a unit ({}), e.g. 25us", given["latency"],
                               unit_list(kLatencyUnits)));
      }
    }
    if (given.count("busy-latency")) {
      link.busy_latency_s = quantity(given["busy-latency"], kLatencyUnits);
      if (!link.busy_latency_s || *link.busy_latency_s < 0) {
        fail(line, fmt::format("busy-latency '{}' is not a number >= 0 with a unit ({}), e.g. 2ms",
                               given["busy-latency"], unit_list(kLatencyUnits)));
      }
    }
    if (given.count("concurrent-message")) {
      link.concurrent_message_s = quantity(given["concurrent-message"], kLatencyUnits);
      if (!link.concurrent_message_s || *link.concurrent_message_s < 0) {
        fail(line, fmt::format("concurrent-message '{}' is not a number >= 0 with a unit ({}), e.g. 50us",
                               given["concurrent-message"], unit_list(kLatencyUnits)));
      }
    }
    if (given.count("bandwidth")) {
      link.bandwidth_Bps = quantity(given["bandwidth"], kBandwidthUnits);
      if (!link.bandwidth_Bps || *link.bandwidth_Bps <= 0) {
        fail(line, fmt::format("bandwidth '{}' is not a number > 0 with a unit ({}), e.g. 10Gbit/s", given["bandwidth"],
                               unit_list(kBandwidthUnits)));
      }
    }
  }

  void parse_straggler(const std::vector<std::string>& words, int line) {
    const std::string usage = "straggler rank=R slowdown=S";
    auto given = keys(words, line, {"rank", "slowdown"}, usage);
    if (!given.count("rank") || !given.count("slowdown")) {
      fail(line, fmt::format("no {}; expected '{}'", given.count("rank") ? "slowdown=" : "rank=", usage));
    }
    const std::string& r = given["rank"];
    long long rank = 0;
    if (!parse_number(r, rank) || rank < 0 || rank >= kMaxGpus) {
      fail(line, fmt::format("straggler rank '{}' is not a whole number >= 0 (ranks count from 0)", r));
    }
    const std::string& s = given["slowdown"];
    double slowdown = 0;
    if (!parse_number(s, slowdown) || slowdown < 1) {
      fail(line, fmt::format("slowdown '{}' is not a number >= 1 (the rank's compute time multiplier)", s));
    }
    if (auto [it, fresh] = straggler_lines_.emplace(static_cast<int>(rank), line); !fresh) {
      fail(line, fmt::format("straggler rank {} given twice (first on line {})", r, it->second));
    }
    spec_.stragglers.push_back({static_cast<int>(rank), slowdown});
  }

  // host peers=P cores=C
  void parse_host(const std::vector<std::string>& words, int line) {
    const std::string usage = "host peers=P cores=C";
    if (host_line_ != 0) fail(line, fmt::format("'host' given twice (first on line {})", host_line_));
    auto given = keys(words, line, {"peers", "cores"}, usage);
    for (const char* required : {"peers", "cores"})
      if (!given.count(required)) fail(line, fmt::format("no {}=; expected '{}'", required, usage));
    spec_.peers_per_host = count(given["peers"], "host peers", line);
    spec_.cores_per_host = count(given["cores"], "host cores", line);
    host_line_ = line;
  }

  // link-episode a=R b=R from=T [to=T] bandwidth=B [latency=T]
  void parse_episode(const std::vector<std::string>& words, int line) {
    const std::string usage = "link-episode a=R b=R from=T [to=T] bandwidth=B [latency=T]";
    auto given = keys(words, line, {"a", "b", "from", "to", "bandwidth", "latency"}, usage);
    for (const char* required : {"a", "b", "from", "bandwidth"})
      if (!given.count(required)) fail(line, fmt::format("no {}=; expected '{}'", required, usage));
    LinkEpisode e;
    e.a = episode_rank(given["a"], line);
    e.b = episode_rank(given["b"], line);
    if (e.a == e.b) fail(line, fmt::format("link-episode joins rank {} to itself; a= and b= must differ", given["a"]));
    auto time = [&](const std::string& key) {
      const auto t = quantity(given[key], kLatencyUnits);
      if (!t || *t < 0)
        fail(line, fmt::format("{} '{}' is not a time >= 0 with a unit ({}), e.g. 2s", key, given[key],
                               unit_list(kLatencyUnits)));
      return *t;
    };
    e.from_s = time("from");
    e.to_s = given.count("to") ? time("to") : std::numeric_limits<double>::infinity();
    if (!(e.to_s > e.from_s)) fail(line, "link-episode ends (to=) before it starts (from=)");
    const auto bandwidth = quantity(given["bandwidth"], kBandwidthUnits);
    if (!bandwidth || *bandwidth <= 0)
      fail(line, fmt::format("bandwidth '{}' is not a number > 0 with a unit ({}), e.g. 100Mbit/s", given["bandwidth"],
                             unit_list(kBandwidthUnits)));
    e.link.bandwidth_Bps = *bandwidth;
    e.link.latency_s = given.count("latency") ? time("latency") : -1;  // resolved in finish()
    spec_.episodes.push_back(e);
    episode_lines_.push_back(line);
  }

  int episode_rank(const std::string& r, int line) const {
    long long rank = 0;
    if (!parse_number(r, rank) || rank < 0 || rank >= kMaxGpus)
      fail(line, fmt::format("link-episode rank '{}' is not a whole number >= 0 (ranks count from 0)", r));
    return static_cast<int>(rank);
  }

  LineReader& reader_;
  ClusterSpec spec_;
  std::vector<int> episode_lines_;  // by episode, for errors found in finish()
  int gpus_line_ = 0;               // 0: not seen yet
  int per_node_line_ = 0;
  int network_line_ = 0;
  int host_line_ = 0;
  int stack_line_ = 0;
  std::string network_;
  LinkLine inter_;
  LinkLine intra_;
  std::map<int, int> straggler_lines_;  // rank -> line, to report a rank past gpus where it stands
};

}  // namespace

ClusterSpec load_cluster_file(const std::string& path) {
  LineReader reader = LineReader::from_file(path, "cannot read cluster file", kClusterFormat);
  return ClusterParser(reader).parse();
}

}  // namespace murmur::sim
