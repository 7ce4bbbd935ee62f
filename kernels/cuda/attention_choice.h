#pragma once
// Which fused-attention path a CUDA call runs: the hand-written flash kernels
// (attention.cu, attention_tensor_core*.cu) or cuDNN's fused flash attention
// (../cudnn/sdpa.cpp). Host-only, no CUDA header: tests and benchmarks read
// the decisions through it.
//
// ANVIL_SDPA_BACKEND (read on every call, so tests and benchmarks can switch):
//   auto  (default) per (direction, device, dtype, B, H, L, S, E, Ev, causal):
//         on first use, time both paths (a few runs each, CUDA events) and
//         keep the faster; later calls reuse the choice.
//   cudnn cuDNN whenever it takes the problem; otherwise the flash kernels,
//         with the reason logged once to stderr.
//   flash always the hand-written kernels.
// cuDNN takes: bfloat16/float16, no attn_mask (causal or none), no dropout,
// head dims multiples of 8 up to 128, and whatever cuDNN itself builds a plan
// for (a cuDNN error while building is a decline, kept with its text). The
// emulated GPU has no cuDNN: there every call runs the flash kernels.
#include <cstdint>
#include <string>

namespace anvil::cuda {

enum class SdpaSetting : uint8_t { Auto, Cudnn, Flash };
enum class SdpaPath : uint8_t { Flash, Cudnn };

// ANVIL_SDPA_BACKEND as a setting; an unknown value throws, naming the three.
SdpaSetting sdpa_setting();

// What the latest attention call of this thread ran in one direction, and
// why ("forced by ANVIL_SDPA_BACKEND=flash", "cuDNN declined: ...",
// "auto: cudnn 0.41 ms vs flash 0.63 ms", ...).
struct SdpaDecision {
  SdpaPath path = SdpaPath::Flash;
  std::string why;
};
SdpaDecision last_sdpa_decision(bool backward);

}  // namespace anvil::cuda
