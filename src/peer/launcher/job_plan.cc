#include "peer/launcher/job_plan.h"

#include <unistd.h>

#include <climits>
#include <map>

namespace murmur::peer::launcher {

std::vector<Placement> place_ranks(int np, const std::vector<HostSlots>& hosts_in, const std::string& source) {
  std::vector<HostSlots> hosts = hosts_in;
  if (hosts.empty()) hosts.push_back({"localhost", np, 0});
  long long total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np > total) {
    std::string listed;
    for (std::size_t i = 0; i < hosts.size() && i < 8; ++i) {
      listed += (i ? ", " : "") + hosts[i].host + ": " + std::to_string(hosts[i].slots);
    }
    if (hosts.size() > 8) listed += ", ...";
    throw SlotError("-np " + std::to_string(np) + " asks for " + std::to_string(np) + " ranks but " + source +
                    " has only " + std::to_string(total) + " slots (" + listed + ")");
  }
  std::vector<Placement> out;
  std::map<std::string, int> per_host;
  for (const auto& h : hosts) {
    for (int s = 0; s < h.slots && static_cast<int>(out.size()) < np; ++s) {
      Placement p;
      p.rank = static_cast<int>(out.size());
      p.host = h.host;
      p.local_rank = per_host[h.host]++;
      p.local = is_this_host(h.host);
      out.push_back(p);
    }
  }
  for (auto& p : out) p.local_size = per_host[p.host];
  return out;
}

bool is_this_host(const std::string& host) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return false;
  std::string self = name;
  if (host == self) return true;
  // "node1" names "node1.cluster" and the other way round.
  auto short_of = [](const std::string& s) { return s.substr(0, s.find('.')); };
  return short_of(host) == short_of(self) &&
         (host.find('.') == std::string::npos || self.find('.') == std::string::npos);
}

}  // namespace murmur::peer::launcher
