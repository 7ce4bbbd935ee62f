#pragma once
/// @file
/// Reductions over any set of dims (negative dims count from the end; an empty
/// dim list means all dims), with keepdim.
#include <utility>

#include "core/tensor.h"

namespace anvil {

Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false);  ///< Sum over `dims`.
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false);  ///< Mean over `dims` (floating x).
/// Largest value over `dims` (the gradient is split evenly among ties).
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Smallest value over `dims` (the gradient is split evenly among ties).
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Shape& dims = {}, bool keepdim = false);  ///< Product over `dims`.
/// Variance over `dims`; correction 1 is the unbiased estimate (libtorch's unbiased = true), 0 the biased one.
Tensor var(const Tensor& x, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
/// Standard deviation over `dims`, with var's correction.
Tensor std(const Tensor& x, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
/// The p-norm over `dims` (p = inf: the largest magnitude).
Tensor norm(const Tensor& x, double p = 2.0, const Shape& dims = {}, bool keepdim = false);

// The same over one dim given as an integer: sum(x, 1), mean(x, -1, true).
#define ANVIL_ONE_DIM_REDUCTION(function) \
  template <DimIndex I> Tensor function(const Tensor& x, I dim, bool keepdim = false) { \
    return function(x, Shape{int64_t(dim)}, keepdim); \
  }
///@{
/// sum, mean, amax, amin and prod over one dim given as an integer: sum(x, 1), mean(x, -1, true).
ANVIL_ONE_DIM_REDUCTION(sum)
ANVIL_ONE_DIM_REDUCTION(mean)
ANVIL_ONE_DIM_REDUCTION(amax)
ANVIL_ONE_DIM_REDUCTION(amin)
ANVIL_ONE_DIM_REDUCTION(prod)
///@}
#undef ANVIL_ONE_DIM_REDUCTION
/// var over one dim.
template <DimIndex I> Tensor var(const Tensor& x, I dim, int64_t correction = 1, bool keepdim = false) {
  return var(x, Shape{int64_t(dim)}, correction, keepdim);
}
/// std over one dim.
template <DimIndex I> Tensor std(const Tensor& x, I dim, int64_t correction = 1, bool keepdim = false) {
  return std(x, Shape{int64_t(dim)}, correction, keepdim);
}
/// norm over one dim.
template <DimIndex I> Tensor norm(const Tensor& x, double p, I dim, bool keepdim = false) {
  return norm(x, p, Shape{int64_t(dim)}, keepdim);
}

///@{
/// Max/min along one dim: values and int64 indices (first occurrence).
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
///@}
/// Indices of the largest values along `dim` (first occurrence), int64.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
/// Indices of the smallest values along `dim` (first occurrence), int64.
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  ///< over the flattened tensor
Tensor argmin(const Tensor& x);  ///< over the flattened tensor

///@{
/// Whether every (all) or some (any) element is non-zero (NaN counts as
/// non-zero), as bool; over no elements all is true and any false. And
/// log(sum(exp(x))) computed without overflow, in x's dtype (float32 for
/// integer inputs); its gradient is softmax(x) times g.
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
///@}
/// log(sum(exp(x))) over `dims`, computed without overflow.
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
/// all over one dim.
template <DimIndex I> Tensor all(const Tensor& x, I dim, bool keepdim = false) {
  return all(x, Shape{int64_t(dim)}, keepdim);
}
/// any over one dim.
template <DimIndex I> Tensor any(const Tensor& x, I dim, bool keepdim = false) {
  return any(x, Shape{int64_t(dim)}, keepdim);
}
/// logsumexp over one dim.
template <DimIndex I> Tensor logsumexp(const Tensor& x, I dim, bool keepdim = false) {
  return logsumexp(x, Shape{int64_t(dim)}, keepdim);
}

Tensor softmax(const Tensor& x, int64_t dim);  ///< exp(x) / sum(exp(x)) along `dim`, computed stably.
Tensor log_softmax(const Tensor& x, int64_t dim);  ///< log(softmax(x, dim)), computed stably.

}  // namespace anvil
