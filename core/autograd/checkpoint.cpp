#include "core/autograd/checkpoint.h"

#include "core/autocast.h"
#include "core/autograd/engine.h"
#include "core/autograd/function.h"
#include "core/random.h"

namespace anvil::autograd {

Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs) {
  GeneratorState rng_at_forward = generator_state();
  const autocast::State autocast_at_forward = autocast::state();
  Tensor out;
  {
    NoGradGuard no_grad;  // nothing inside fn is recorded or saved
    out = fn(inputs);
  }
  if (!GradMode::is_enabled()) return out;
  out = out.detach();
  // Parameters captured by fn need grads too, so the node is recorded even
  // when no input requires grad.
  autograd::record("checkpoint", inputs, out, [fn, inputs, rng_at_forward, autocast_at_forward](const Tensor& g) {
    std::vector<Tensor> detached;
    for (const Tensor& t : inputs) {
      Tensor d = t.detach();
      if (t.requires_grad()) d.requires_grad_(true);
      detached.push_back(d);
    }
    GeneratorState rng_now = generator_state();
    set_generator_state(rng_at_forward);
    Tensor recomputed;
    {
      EnableGradGuard grad_on;
      // The recomputation casts as the first forward did (the engine runs backward with autocast off).
      const autocast::State autocast_now = autocast::state();
      autocast::set_state(autocast_at_forward);
      struct Restore {
        autocast::State s;
        ~Restore() { autocast::set_state(s); }
      } restore{autocast_now};
      recomputed = fn(detached);
    }
    set_generator_state(rng_now);
    std::vector<Tensor> grads(inputs.size());
    if (recomputed.requires_grad()) {
      // A nested backward: accumulates into captured leaves (weights) and into
      // the detached inputs, whose grads are this node's results.
      autograd::backward({recomputed}, {g}, {false, GradMode::is_enabled()});
      for (size_t i = 0; i < inputs.size(); ++i)
        if (detached[i].requires_grad()) grads[i] = detached[i].grad();
    }
    return grads;
  });
  return out;
}

}  // namespace anvil::autograd
