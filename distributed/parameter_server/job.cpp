#include "distributed/parameter_server/job.h"

#include <cstdlib>
#include <exception>

#include <unistd.h>

#include "core/base/error.h"

namespace anvil::distributed::ps {

namespace {

int int_var(const EnvLookup& lookup, const char* name, int min_value) {
  const auto text = lookup(name);
  ANVIL_CHECK(text.has_value() && !text->empty(), "parameter server job: ", name,
              " is not set (start the job with anvil-run --ps N)");
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(*text, &used);
    if (used != text->size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    fail("parameter server job: ", name, " must be an integer, got '", *text, "'");
  }
  ANVIL_CHECK(v >= min_value, "parameter server job: ", name, " must be at least ", min_value, ", got ", v);
  return v;
}

}  // namespace

JobRole job_role_from(const EnvLookup& lookup) {
  JobRole r;
  const auto role = lookup("ANVIL_PS_ROLE");
  ANVIL_CHECK(role.has_value() && !role->empty(),
              "parameter server job: ANVIL_PS_ROLE is not set (start the job with anvil-run --ps N)");
  ANVIL_CHECK(*role == "ps" || *role == "worker", "parameter server job: ANVIL_PS_ROLE must be 'ps' or 'worker', got '",
              *role, "'");
  r.is_ps = *role == "ps";
  r.num_ps = int_var(lookup, "ANVIL_NUM_PS", 1);
  r.num_workers = int_var(lookup, "ANVIL_NUM_WORKERS", 1);
  if (r.is_ps) {
    r.index = int_var(lookup, "ANVIL_PS_INDEX", 0);
    ANVIL_CHECK(r.index < r.num_ps, "parameter server job: ANVIL_PS_INDEX ", r.index, " is not below ANVIL_NUM_PS ",
                r.num_ps);
  } else {
    r.index = int_var(lookup, "ANVIL_WORKER_INDEX", 0);
    ANVIL_CHECK(r.index < r.num_workers, "parameter server job: ANVIL_WORKER_INDEX ", r.index,
                " is not below ANVIL_NUM_WORKERS ", r.num_workers);
  }
  return r;
}

JobRole job_role_from_environment() {
  return job_role_from([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

std::string advertised_host(const EnvLookup& lookup) {
  if (auto h = lookup("ANVIL_PS_HOST"); h && !h->empty()) return *h;
  if (auto m = lookup("MASTER_ADDR"); m && (m->rfind("127.", 0) == 0 || *m == "localhost" || *m == "::1")) return *m;
  char name[256] = {};
  ANVIL_CHECK(::gethostname(name, sizeof name - 1) == 0, "parameter server job: gethostname failed; set ANVIL_PS_HOST");
  return name;
}

void publish_server(Store& store, int ps_index, const ServerAddress& address) {
  store.set("ps/server/" + std::to_string(ps_index), address.host + " " + std::to_string(address.port));
}

std::vector<ServerAddress> lookup_servers(Store& store, int num_ps) {
  std::vector<ServerAddress> out;
  for (int i = 0; i < num_ps; ++i) {
    const std::string key = "ps/server/" + std::to_string(i);
    const std::string v = store.get_string(key);
    const auto space = v.rfind(' ');
    ANVIL_CHECK(space != std::string::npos, "parameter server job: store key ", key, " holds '", v,
                "', not 'host port'");
    out.push_back({v.substr(0, space), std::atoi(v.c_str() + space + 1)});
  }
  return out;
}

}  // namespace anvil::distributed::ps
