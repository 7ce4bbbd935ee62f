// The registry's list of ops, for the coverage table. The kernels themselves
// sit in per-op slots (kernel_registry.h); this only remembers names.
#include "kernels/kernel_registry.h"

#include <map>
#include <mutex>

namespace anvil::kernel_registry {
namespace {

struct Book {
  std::mutex mutex;
  std::map<std::string, OpCoverage> ops;
};

Book& book() {
  static Book b;  // function-local: ready whichever file's initialiser comes first
  return b;
}

OpCoverage& entry(Book& b, const char* name, bool has_fallback) {
  OpCoverage& e = b.ops[name];
  e.name = name;
  e.has_fallback = e.has_fallback || has_fallback;
  return e;
}

}  // namespace

void note_op(const char* name, bool has_fallback) {
  Book& b = book();
  std::lock_guard lock(b.mutex);
  entry(b, name, has_fallback);
}

void note_kernel(const char* name, bool has_fallback, DeviceType device) {
  Book& b = book();
  std::lock_guard lock(b.mutex);
  entry(b, name, has_fallback).has_kernel[static_cast<int>(device)] = true;
}

std::vector<OpCoverage> coverage() {
  Book& b = book();
  std::lock_guard lock(b.mutex);
  std::vector<OpCoverage> rows;
  for (const auto& [name, e] : b.ops) rows.push_back(e);
  return rows;  // std::map keeps them sorted by name
}

}  // namespace anvil::kernel_registry
