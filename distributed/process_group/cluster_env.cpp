#include "distributed/process_group/cluster_env.h"

#include <cctype>

#include "core/base/error.h"

namespace anvil::distributed {

namespace {

// A decimal number of at most 9 digits (no sign, no spaces), or nullopt.
std::optional<long> small_number(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stol(s);
}

// Splits at commas outside brackets.
std::vector<std::string> split_top_level(const std::string& list) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : list) {
    if (c == '[') {
      ANVIL_CHECK(depth == 0, "hostlist '", list, "': nested '['");
      ++depth;
    } else if (c == ']') {
      ANVIL_CHECK(depth == 1, "hostlist '", list, "': ']' without '['");
      --depth;
    }
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back().push_back(c);
  }
  ANVIL_CHECK(depth == 0, "hostlist '", list, "': '[' without ']'");
  return parts;
}

// "01-04,07" -> 01 02 03 04 07.
std::vector<std::string> expand_ranges(const std::string& ranges, const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    if (comma == std::string::npos) comma = ranges.size();
    const std::string r = ranges.substr(start, comma - start);
    const size_t dash = r.find('-');
    const std::string lo_text = r.substr(0, dash), hi_text = dash == std::string::npos ? lo_text : r.substr(dash + 1);
    const auto lo = small_number(lo_text), hi = small_number(hi_text);
    ANVIL_CHECK(lo && hi, "hostlist '", list, "': '", r, "' is not a number or a range lo-hi");
    ANVIL_CHECK(*lo <= *hi, "hostlist '", list, "': the range '", r, "' runs backwards");
    ANVIL_CHECK(*hi - *lo < 1000000, "hostlist '", list, "': the range '", r, "' is too long");
    for (long v = *lo; v <= *hi; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
      out.push_back(digits);
    }
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list, size_t max_hosts) {
  std::vector<std::string> hosts;
  for (const std::string& item : split_top_level(list)) {
    ANVIL_CHECK(!item.empty(), "hostlist '", list, "': an empty host name");
    // Each bracket group multiplies the names so far (rack[1-2]-n[1-2]).
    std::vector<std::string> names{""};
    size_t i = 0;
    while (i < item.size()) {
      const size_t open = item.find('[', i);
      const std::string literal = item.substr(i, open == std::string::npos ? std::string::npos : open - i);
      for (auto& n : names) n += literal;
      if (open == std::string::npos) break;
      const size_t close = item.find(']', open);
      const auto values = expand_ranges(item.substr(open + 1, close - open - 1), list);
      ANVIL_CHECK(names.size() * values.size() + hosts.size() <= max_hosts, "hostlist '", list, "': more than ",
                  max_hosts, " hosts");
      // Long names times many hosts: bounded too (a hostile environment, the fuzzer).
      ANVIL_CHECK(names.size() * values.size() * (item.size() + 10) <= (size_t{64} << 20), "hostlist '", list,
                  "': expands to more than 64 MiB of names");
      std::vector<std::string> next;
      for (const auto& n : names)
        for (const auto& v : values) next.push_back(n + v);
      names.swap(next);
      i = close + 1;
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

std::vector<int> expand_tasks_per_node(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(start, comma - start);
    const size_t paren = part.find("(x");
    const auto count = small_number(part.substr(0, paren));
    std::optional<long> repeat = 1;
    if (paren != std::string::npos) {
      repeat = part.back() == ')' ? small_number(part.substr(paren + 2, part.size() - paren - 3)) : std::nullopt;
    }
    ANVIL_CHECK(count && repeat && *count >= 1 && *repeat >= 1 && out.size() + static_cast<size_t>(*repeat) <= 1000000,
                "SLURM_TASKS_PER_NODE='", text, "': '", part, "' is not N or N(xK)");
    out.insert(out.end(), static_cast<size_t>(*repeat), static_cast<int>(*count));
    start = comma + 1;
  }
  return out;
}

SchedulerEnv scheduler_env_from(const EnvLookup& lookup) {
  auto get = [&](const char* name) -> std::optional<EnvValue> {
    auto v = lookup(name);
    if (!v || v->empty()) return std::nullopt;
    return EnvValue{name, *v};
  };
  SchedulerEnv s;
  if (auto rank = get("OMPI_COMM_WORLD_RANK")) {
    s.scheduler = "Open MPI";
    s.rank = rank;
    s.world_size = get("OMPI_COMM_WORLD_SIZE");
    s.local_rank = get("OMPI_COMM_WORLD_LOCAL_RANK");
    s.local_world_size = get("OMPI_COMM_WORLD_LOCAL_SIZE");
    // Every rank on this node: loopback reaches rank 0. Otherwise Open MPI
    // names no master; MASTER_ADDR must come with mpirun -x.
    if (s.world_size && s.local_world_size && s.world_size->text == s.local_world_size->text)
      s.master_addr = EnvValue{"OMPI_COMM_WORLD_LOCAL_SIZE", "127.0.0.1"};
    return s;
  }
  if (auto rank = get("SLURM_PROCID")) {
    s.scheduler = "SLURM";
    s.rank = rank;
    s.world_size = get("SLURM_NTASKS");
    s.local_rank = get("SLURM_LOCALID");
    if (auto tasks = get("SLURM_TASKS_PER_NODE")) {
      const auto per_node = expand_tasks_per_node(tasks->text);
      const auto node = get("SLURM_NODEID");
      // Without SLURM_NODEID only a one-node list says which entry is ours.
      const auto index = node ? small_number(node->text) : per_node.size() == 1 ? std::optional<long>(0) : std::nullopt;
      ANVIL_CHECK(index && *index < static_cast<long>(per_node.size()), "SLURM_NODEID='", node ? node->text : "",
                  "' is not a node of SLURM_TASKS_PER_NODE='", tasks->text, "' (", per_node.size(), " nodes)");
      s.local_world_size = EnvValue{"SLURM_TASKS_PER_NODE", std::to_string(per_node[static_cast<size_t>(*index)])};
    }
    auto nodes = get("SLURM_STEP_NODELIST");
    if (!nodes) nodes = get("SLURM_JOB_NODELIST");
    if (nodes) {
      std::vector<std::string> hosts;
      try {
        hosts = expand_hostlist(nodes->text);
      } catch (const Error& e) {
        fail(nodes->name, ": ", e.what());
      }
      s.master_addr = EnvValue{nodes->name, hosts.front()};
    }
    if (auto job = get("SLURM_JOB_ID")) {
      const std::string& id = job->text;
      const auto last4 = small_number(id.size() > 4 ? id.substr(id.size() - 4) : id);
      ANVIL_CHECK(last4.has_value(), "SLURM_JOB_ID='", id, "' is not a number");
      s.master_port = EnvValue{"SLURM_JOB_ID", std::to_string(15000 + *last4)};
    }
  }
  return s;
}

}  // namespace anvil::distributed
