// anvil::cpu_capability(): kernels/cpu_info.h.
#include <fstream>
#include <string>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/cpu_info.h"

namespace anvil {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown CPU";
}

std::string describe(const GemmKernel& k) { return k.library + " " + k.kernel + " (" + k.isa + ")"; }

}  // namespace

CpuCapability cpu_capability() {
  CpuCapability c;
  c.cpu_model = cpu_model_name();
  c.isa = cpu::cpu_isa();
  c.float32_gemm = cpu::float32_gemm_kernel();
  c.float64_gemm = cpu::float64_gemm_kernel();
  c.conv2d = cpu::onednn::conv2d_implementation();
  c.vector_math = cpu::vec::target();
  return c;
}

std::string to_string(const CpuCapability& c) {
  return c.cpu_model + " (" + c.isa + "): float32 GEMM " + describe(c.float32_gemm) + ", float64 GEMM " +
         describe(c.float64_gemm) + ", conv2d " + c.conv2d + ", vector math " + c.vector_math;
}

}  // namespace anvil
