#include "net_namespaces.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "harness.h"

namespace anvil::test {

namespace {

const char* const kPrefix = "anvil-test-";

std::string find_ip() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// `ip args...`, bounded: a wedged ip must not hang the test.
RunResult ip(const std::string& ip_path, std::vector<std::string> args) {
  args.insert(args.begin(), ip_path);
  return run_command(args, {.timeout = std::chrono::seconds(10)});
}

std::string joined(const std::vector<std::string>& args) {
  std::string s = "ip";
  for (const auto& a : args) s += " " + a;
  return s;
}

// Namespaces named by a test process that is gone: it was killed before its
// destructor ran. Ours by name only; a live process's are left alone.
void delete_stale_pairs(const std::string& ip_path) {
  RunResult list = ip(ip_path, {"netns", "list"});
  std::istringstream lines(list.output);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::string(kPrefix).size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ip(ip_path, {"netns", "delete", name});
  }
}

}  // namespace

std::unique_ptr<NamespacePair> NamespacePair::create(std::string* why_not) {
  const std::string ip_path = find_ip();
  if (ip_path.empty()) {
    *why_not = "no `ip` binary (iproute2) in /usr/sbin, /sbin, /usr/bin or /bin";
    return nullptr;
  }
  if (::geteuid() != 0) {
    *why_not = "creating network namespaces needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); running as uid " +
               std::to_string(::geteuid());
    return nullptr;
  }
  delete_stale_pairs(ip_path);
  static std::atomic<int> counter{0};
  const int serial = counter++;
  const std::string base = kPrefix + std::to_string(::getpid()) + "-" + std::to_string(serial);
  // Interface names are at most 15 characters: "av" + pid + "x" + serial + end.
  // They live only inside the pair's namespaces, so they need not be unique.
  const std::string link_base = "av" + std::to_string(::getpid() % 10000000) + "x" + std::to_string(serial % 100);
  std::unique_ptr<NamespacePair> pair(new NamespacePair);
  pair->ip_ = ip_path;
  pair->addresses_ = {"10.213.0.1", "10.213.0.2"};
  const std::vector<std::string> ends = {"a", "b"};
  auto step = [&](const std::vector<std::string>& args) {
    RunResult r = ip(ip_path, args);
    if (r.exit_code == 0) return true;
    *why_not = "this machine cannot make the test's network namespaces: `" + joined(args) + "` failed (" +
               (r.timed_out ? std::string("timed out") : "exit " + std::to_string(r.exit_code)) + "): " + r.output;
    return false;
  };
  for (int node = 0; node < 2; ++node) {
    const std::string name = base + "-" + ends[node];
    if (!step({"netns", "add", name})) return nullptr;  // the destructor deletes the ones made
    pair->names_.push_back(name);
    pair->links_.push_back(link_base + ends[node]);
  }
  if (!step({"link", "add", pair->links_[0], "netns", pair->names_[0], "type", "veth", "peer", "name", pair->links_[1],
             "netns", pair->names_[1]}))
    return nullptr;
  for (int node = 0; node < 2; ++node) {
    const std::string& ns = pair->names_[node];
    if (!step({"-n", ns, "link", "set", "lo", "up"}) ||
        !step({"-n", ns, "addr", "add", pair->addresses_[node] + "/24", "dev", pair->links_[node]}) ||
        !step({"-n", ns, "link", "set", pair->links_[node], "up"}))
      return nullptr;
  }
  return pair;
}

NamespacePair::~NamespacePair() {
  // Deleting a namespace deletes its end of the veth, and with it the pair.
  for (const auto& name : names_) ip(ip_, {"netns", "delete", name});
}

std::vector<std::string> NamespacePair::inside(int node, const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = {ip_, "netns", "exec", name(node)};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

void NamespacePair::cut_link() {
  for (int node = 0; node < 2; ++node) {
    RunResult r = ip(ip_, {"-n", names_[node], "link", "set", links_[node], "down"});
    if (r.exit_code != 0) throw std::runtime_error("cut_link: taking " + links_[node] + " down failed: " + r.output);
  }
}

}  // namespace anvil::test
