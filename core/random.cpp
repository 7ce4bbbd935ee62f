#include "core/random.h"

#include <mutex>

#include "core/base/philox.h"

namespace anvil {

namespace {
std::mutex generator_mutex;
GeneratorState generator{67280421310721ull, 0};
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_mutex);
  generator = {seed, 0};
}

GeneratorState generator_state() {
  std::lock_guard<std::mutex> lock(generator_mutex);
  return generator;
}

void set_generator_state(const GeneratorState& s) {
  std::lock_guard<std::mutex> lock(generator_mutex);
  generator = s;
}

GeneratorState reserve_random(uint64_t n) {
  std::lock_guard<std::mutex> lock(generator_mutex);
  GeneratorState s = generator;
  generator.offset += philox::counters_for(n);
  return s;
}

}  // namespace anvil
