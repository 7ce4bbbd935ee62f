// nonzero: the coordinates of the nonzero elements in row-major order. One
// serial pass counts them (the caller sized out from its own count; a
// mismatch is a bug, caught before anything is written), a second writes them.
#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/shapes/index_checks.h"

namespace anvil::cpu {

void nonzero(const View& out, const View& in) {
  shapes::check_nonzero(out, in);
  const int64_t rank = in.dim();
  StridedLoop<1> loop({&in});
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto is_set = [](const char* p) { return cast_value<bool>(*reinterpret_cast<const T*>(p)); };
    int64_t count = 0;
    loop.run({static_cast<char*>(in.data)}, 0, loop.numel(), [&](const StridedLoop<1>::Run& r) {
      for (int64_t j = 0; j < r.n; ++j) count += is_set(r.ptr[0] + j * r.stride[0]);
    });
    ANVIL_CHECK(count == out.shape[0], "nonzero: input ", in.shape, " has ", count,
                " nonzero elements but the output has room for ", out.shape[0]);
    if (rank == 0) return;
    int64_t* base = static_cast<int64_t*>(out.data);
    int64_t row = 0;
    loop.run({static_cast<char*>(in.data)}, 0, loop.numel(), [&](const StridedLoop<1>::Run& r) {
      for (int64_t j = 0; j < r.n; ++j) {
        if (!is_set(r.ptr[0] + j * r.stride[0])) continue;
        int64_t linear = r.first + j;  // row-major index in in.shape
        for (int64_t d = rank - 1; d >= 0; --d) {
          base[row * out.strides[0] + d * out.strides[1]] = linear % in.shape[d];
          linear /= in.shape[d];
        }
        ++row;
      }
    });
  });
}

ANVIL_REGISTER_KERNEL(kernel::Nonzero, CPU, nonzero);

}  // namespace anvil::cpu
