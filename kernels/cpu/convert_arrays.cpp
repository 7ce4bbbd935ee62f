// convert_array (kernels/convert_arrays.h): the CPU backend's vector
// conversions, for the layers above core that convert raw host buffers.
#include "kernels/convert_arrays.h"

#include "kernels/cpu/vector_convert.h"
#include "kernels/cpu/vector_math.h"

namespace anvil {

void convert_array(float* out, const Half* in, int64_t n) { cpu::vec::convert(out, in, n); }
void convert_array(Half* out, const float* in, int64_t n) { cpu::vec::convert(out, in, n); }
void convert_array(float* out, const BFloat16* in, int64_t n) { cpu::vec::convert(out, in, n); }
void convert_array(BFloat16* out, const float* in, int64_t n) { cpu::vec::convert(out, in, n); }

bool convert_array_vectorized() { return cpu::vec::enabled(); }

}  // namespace anvil
