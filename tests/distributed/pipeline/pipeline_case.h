#pragma once
// One pipeline run of the parameterised launch tests: how many stages, which
// schedule, how many micro-batches (test_pipeline_launch.cpp over Gloo,
// test_pipeline_nccl.cpp over NCCL).
#include <ostream>
#include <string>

namespace anvil::test {

struct PipelineCase {
  int stages;
  std::string schedule;
  int micro_batches;
};
// Names the case in test listings (gtest would print the struct's bytes).
inline void PrintTo(const PipelineCase& c, std::ostream* os) {
  *os << c.stages << " stages, " << c.schedule << ", " << c.micro_batches << " micro-batches";
}

}  // namespace anvil::test
