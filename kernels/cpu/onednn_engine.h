#pragma once
// The one oneDNN CPU engine the primitives run on, and the attribute that
// makes a primitive take its scratchpad from us (per call, so one primitive
// can run on several threads at once). Only for builds with oneDNN.
#include <oneapi/dnnl/dnnl.hpp>

namespace anvil::cpu::onednn {

inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace anvil::cpu::onednn
