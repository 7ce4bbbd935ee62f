#pragma once
// NVTX ranges: name the host-side span of each backend call, so Nsight
// Systems (nsys profile --trace=cuda,nvtx) shows "anvil: binary.add" above
// the kernels it launched. NVTX3 is header-only: without a profiler attached
// a push/pop is a check of a function pointer, cheap enough to leave in
// release builds.
//
//   void binary(BinaryOp op, ...) {
//     ANVIL_NVTX_RANGE("binary");   // first statement; the range ends with the scope
//     ...
//   }
//
// The name must be a string literal (or otherwise outlive the range).
#include <nvtx3/nvToolsExt.h>

namespace anvil::cuda {

// Every anvil range lives in one NVTX domain, so a profile can show or hide
// anvil's ranges apart from those of cuBLAS, cuDNN or the application.
inline nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("anvil");
  return domain;
}

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(nvtx_domain(), &attributes);
  }
  ~NvtxRange() { nvtxDomainRangePop(nvtx_domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace anvil::cuda

#define ANVIL_NVTX_CONCAT_INNER_(a, b) a##b
#define ANVIL_NVTX_CONCAT_(a, b) ANVIL_NVTX_CONCAT_INNER_(a, b)
// A range named `name` from here to the end of the enclosing scope.
#define ANVIL_NVTX_RANGE(name) ::anvil::cuda::NvtxRange ANVIL_NVTX_CONCAT_(anvil_nvtx_range_, __COUNTER__)(name)
