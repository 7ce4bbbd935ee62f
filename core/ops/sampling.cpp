// randperm, multinomial and bernoulli written with rand (Philox: reproducible
// per seed, the same on every device), sort and cumsum, so they need no
// kernel of their own.
#include "core/ops/sampling.h"

#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/scan.h"
#include "core/ops/shape.h"
#include "core/ops/sort.h"

namespace anvil {

namespace {

// The largest n whose values 0..n-1 the dtype holds exactly (so a permutation
// stays one): the floats' integer range, uint8's 256; bool holds no permutation past 2.
int64_t randperm_limit(DType dtype) {
  switch (dtype) {
    case kFloat16:
      return int64_t{1} << 11;
    case kBFloat16:
      return int64_t{1} << 8;
    case kFloat32:
      return int64_t{1} << 24;
    case kUInt8:
      return 256;
    case kBool:
      return 2;
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

}  // namespace

// Uniform keys, sorted: a uniformly random order (float64 keys make ties,
// which the stable sort would break by position, vanishingly rare).
Tensor randperm(int64_t n, const TensorOptions& options) {
  ANVIL_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  ANVIL_CHECK(n <= randperm_limit(options.dtype_), "randperm: n = ", n, " is more than ", options.dtype_,
              " holds exactly (at most ", randperm_limit(options.dtype_), " values 0..n-1)");
  NoGradGuard no_grad;
  Tensor keys = rand({n}, TensorOptions(kFloat64).device(options.device_));
  return argsort(keys).to(options.dtype_);
}

namespace {

// probs as [rows, n] float64, checked: non-negative, finite, a positive sum.
Tensor checked_weights(const Tensor& probs) {
  detail::check_defined("multinomial", probs, "probs");
  ANVIL_CHECK(probs.dim() == 1 || probs.dim() == 2, "multinomial: expected probs of 1 or 2 dims, got ",
              detail::describe(probs));
  ANVIL_CHECK(is_floating(probs.dtype()), "multinomial: expected floating probs, got ", detail::describe(probs));
  Tensor w = (probs.dim() == 1 ? probs.unsqueeze(0) : probs).detach().to(kFloat64);
  ANVIL_CHECK(w.size(1) > 0, "multinomial: probs has no categories (", detail::describe(probs), ")");
  // One sync for all three checks.
  const std::vector<int64_t> bad =
      stack({sum(lt(w, 0.0)), sum(logical_not(isfinite(w))), sum(le(sum(w, 1), 0.0))}).to_vector<int64_t>();
  ANVIL_CHECK(bad[0] == 0 && bad[1] == 0, "multinomial: probs must be finite and non-negative (",
              detail::describe(probs), ")");
  ANVIL_CHECK(bad[2] == 0, "multinomial: every row of probs must have a positive sum (", detail::describe(probs), ")");
  return w;
}

}  // namespace

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  NoGradGuard no_grad;
  Tensor w = checked_weights(probs);
  const int64_t rows = w.size(0), n = w.size(1);
  ANVIL_CHECK(num_samples > 0, "multinomial: num_samples must be positive, got ", num_samples);
  Tensor out;
  if (replacement) {
    // Inverse CDF: sample k where cdf[k - 1] <= u < cdf[k]. The CDF is divided
    // by its own last value, so it ends at exactly 1 and u < 1 always lands;
    // a zero weight has an empty interval and is never drawn.
    Tensor cdf = cumsum(w, 1);
    cdf = cdf / cdf.narrow(1, n - 1, 1);
    Tensor u = rand({rows, num_samples}, TensorOptions(kFloat64).device(w.device()));
    out = sum(le(cdf.unsqueeze(1), u.unsqueeze(2)), 2);  // [rows, num_samples]: how many cdf values are <= u
  } else {
    const int64_t fewest_nonzero = sum(gt(w, 0.0), 1).min().item<int64_t>();
    ANVIL_CHECK(num_samples <= fewest_nonzero, "multinomial: cannot draw ", num_samples,
                " samples without replacement from a row with ", fewest_nonzero, " non-zero weights (probs ",
                detail::describe(probs), ")");
    // The k largest w / E with E ~ Exponential(1): a weighted sample without
    // replacement (the exponential-race form of Efraimidis-Spirakis).
    Tensor e = -log(1.0 - rand({rows, n}, TensorOptions(kFloat64).device(w.device())));
    out = topk(w / e, num_samples, 1).second;
  }
  return probs.dim() == 1 ? out.squeeze(0) : out;
}

Tensor bernoulli(const Tensor& probs) {
  detail::check_defined("bernoulli", probs, "probs");
  ANVIL_CHECK(is_floating(probs.dtype()), "bernoulli: expected floating probabilities, got ", detail::describe(probs));
  NoGradGuard no_grad;
  Tensor u = rand(probs.shape(), TensorOptions(kFloat64).device(probs.device()));
  return lt(u, probs.detach().to(kFloat64)).to(probs.dtype());
}

Tensor bernoulli(const Tensor& x, double p) {
  detail::check_defined("bernoulli", x, "input");
  ANVIL_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: p must be in [0, 1], got ", p);
  NoGradGuard no_grad;
  Tensor u = rand(x.shape(), TensorOptions(kFloat64).device(x.device()));
  return lt(u, p).to(x.dtype());
}

}  // namespace anvil
