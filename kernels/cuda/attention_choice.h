#pragma once
// Which fused-attention path a CUDA call runs: the hand-written flash kernels
// (attention.cu, attention_tensor_core*.cu) or cuDNN's fused flash attention
// (../cudnn/sdpa.cpp). Host-only, no CUDA header: tests and benchmarks read
// the decisions through it.
//
// ANVIL_SDPA_BACKEND (read on every call, so tests and benchmarks can switch):
//   auto  (default) per (direction, device, dtype, B, H, L, S, E, Ev, causal):
//         on first use, time both paths (a few runs each, CUDA events) and
//         keep the faster; later calls reuse the choice. A cuDNN decline is
//         kept only when it holds for the problem (no plan), not for one
//         call (misaligned operands, no memory); while the stream is being
//         captured into a CUDA graph an undecided problem runs the flash
//         kernels and is decided on a later, uncaptured call.
//   cudnn cuDNN whenever it takes the problem; otherwise the flash kernels,
//         with the reason logged once to stderr.
//   flash always the hand-written kernels.
// cuDNN takes: bfloat16/float16, no attn_mask (causal or none), no dropout,
// head dims multiples of 8 up to 128, and whatever cuDNN itself builds a plan
// for (a cuDNN error while building is a decline, kept with its text). The
// emulated GPU has no cuDNN: there every call runs the flash kernels.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace anvil::cuda {

enum class SdpaSetting : uint8_t { Auto, Cudnn, Flash };
enum class SdpaPath : uint8_t { Flash, Cudnn };

// ANVIL_SDPA_BACKEND as a setting; an unknown value throws, naming the three.
SdpaSetting sdpa_setting();

// What the latest attention call of this thread ran in one direction, and
// why ("forced by ANVIL_SDPA_BACKEND=flash", "cuDNN declined: ...",
// "auto: cudnn T1 ms vs flash T2 ms" with the two timed runs' means, ...).
struct SdpaDecision {
  SdpaPath path = SdpaPath::Flash;
  std::string why;
};
SdpaDecision last_sdpa_decision(bool backward);

// Sets ANVIL_SDPA_BACKEND for a scope (tests, benchmarks), restoring what was
// there before; a null value leaves it as it is. setenv is not thread-safe:
// for single-threaded test and benchmark bodies.
class ScopedSdpaBackend {
 public:
  explicit ScopedSdpaBackend(const char* value) : set_(value != nullptr) {
    if (!set_) return;
    if (const char* old = std::getenv("ANVIL_SDPA_BACKEND")) old_ = old;
    setenv("ANVIL_SDPA_BACKEND", value, 1);
  }
  ~ScopedSdpaBackend() {
    if (!set_) return;
    if (old_) {
      setenv("ANVIL_SDPA_BACKEND", old_->c_str(), 1);
    } else {
      unsetenv("ANVIL_SDPA_BACKEND");
    }
  }
  ScopedSdpaBackend(const ScopedSdpaBackend&) = delete;
  ScopedSdpaBackend& operator=(const ScopedSdpaBackend&) = delete;

 private:
  bool set_;
  std::optional<std::string> old_;
};

}  // namespace anvil::cuda
