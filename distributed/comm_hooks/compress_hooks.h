#pragma once
/// @file
/// 16-bit gradient compression (PyTorch's fp16_compress_hook and
/// bf16_compress_hook): each rank casts its bucket to float16 or bfloat16,
/// divided by the world size first, the ranks all-reduce the half-size
/// buffer, and the sum is cast back into the bucket. Half the bytes of the
/// float32 all-reduce; the price is 16-bit rounding of every gradient.
///
/// Dividing before the reduction keeps the sum of n ranks inside float16's
/// range (largest finite value 65504); bfloat16 has float32's range but only
/// 8 significant bits. Which to pick: bf16 when gradients span many orders
/// of magnitude (no underflow below 6e-5 as with fp16), fp16 when they are
/// well scaled (3 more bits of precision).
#include "distributed/comm_hooks/comm_hook.h"

namespace anvil::distributed {

/// DDP hook: the bucket all-reduced in float16, divided by the world size first.
BucketFutureHandle fp16_compress_hook(GradBucket& bucket);
/// DDP hook: the bucket all-reduced in bfloat16, divided by the world size first.
BucketFutureHandle bf16_compress_hook(GradBucket& bucket);

}  // namespace anvil::distributed
