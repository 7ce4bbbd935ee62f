#pragma once
// Two "hosts" on one machine for multi-node tests: two network namespaces
// joined by a veth pair, each with loopback up and one address on the link
// (node 0: 10.213.0.1/24, node 1: 10.213.0.2/24). Each pair lives in its own
// namespaces, so the fixed addresses never collide between pairs; the names
// carry the test process's pid and a counter, so parallel ctest runs never
// collide either.
//
//   std::string why_not;
//   auto hosts = anvil::test::NamespacePair::create(&why_not);
//   if (!hosts) GTEST_SKIP() << why_not;
//   Job node0(hosts->inside(0, {bin_path("anvil-run"), ...}));
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's `ip`. The
// destructor deletes both namespaces (the veth pair goes with them); create()
// also deletes pairs left by test processes that died before theirs ran.
#include <memory>
#include <string>
#include <vector>

namespace anvil::test {

class NamespacePair {
 public:
  // The pair, or null with *why_not saying what this machine lacks.
  static std::unique_ptr<NamespacePair> create(std::string* why_not);
  ~NamespacePair();
  NamespacePair(const NamespacePair&) = delete;
  NamespacePair& operator=(const NamespacePair&) = delete;

  const std::string& name(int node) const { return names_.at(static_cast<size_t>(node)); }
  // The node's address on the link between them.
  const std::string& address(int node) const { return addresses_.at(static_cast<size_t>(node)); }
  // argv run inside the node's namespace (`ip netns exec NAME argv...`,
  // which execs argv: the pid stays the same).
  std::vector<std::string> inside(int node, const std::vector<std::string>& argv) const;
  // Takes the link down on both ends: the nodes stay up but hear nothing
  // from each other (a pulled cable, a dead switch). Throws on failure.
  void cut_link();

 private:
  NamespacePair() = default;

  std::string ip_;  // path of the ip binary
  std::vector<std::string> names_;
  std::vector<std::string> links_;  // the veth end in each namespace
  std::vector<std::string> addresses_;
};

}  // namespace anvil::test
