#pragma once
/// @file
/// Layer-split model parallelism: consecutive parts of a Sequential live on
/// different devices. In one process, ModelParallelSequential moves each
/// part's input to that part's device in forward; Tensor::to is
/// differentiable, so backward carries gradients back across the devices
/// without further help.
///
///     auto seq = std::make_shared<nn::Sequential>(...);            // 6 layers
///     auto mp = distributed::split_across_devices(seq, {Device::cuda(0), Device::cuda(1)}, {3});
///     Tensor y = mp->forward(x);   // layers 0-2 on cuda:0, 3-5 on cuda:1; y on cuda:1
///     std::cout << mp->placement();
///
/// Across processes the same split gives each rank one stage
/// (stage_of_sequential); distributed/pipeline/stage.h moves activations and gradients
/// between neighbouring ranks with send/recv.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/layers/container.h"

namespace anvil::distributed {

/// Where part i starts: boundaries[i-1] (part 0 starts at 0). An empty list
/// asks for a balanced split.
using Boundaries = std::vector<size_t>;

/// Splits `costs` (one per layer) into `parts` consecutive runs so that the
/// largest run's total is as small as possible; returns the start of parts
/// 1 .. parts-1. Every part gets at least one layer when there are enough.
Boundaries balanced_boundaries(const std::vector<double>& costs, int parts);
/// balanced_boundaries with each layer's cost = its parameter count (+1, so
/// parameterless layers still count a little).
Boundaries balance_by_parameters(const nn::Sequential& seq, int parts);
/// Checks boundaries against a sequence of n layers split into `parts` (strictly
/// increasing, inside (0, n)) and throws an anvil::Error naming the problem.
void check_boundaries(const Boundaries& boundaries, size_t n, int parts);

/// The layers [begin, end) of a split: part i covers [start(i), start(i+1)).
struct PartRange {
  ///@{
  /// the first layer and one past the last
  size_t begin = 0, end = 0;
  ///@}
};
/// The [begin, end) layer range of each part.
std::vector<PartRange> part_ranges(const Boundaries& boundaries, size_t n);

/// An nn::Sequential split across devices in one process: part i's layers on devices[i], activations moved between them
/// (see the file comment).
class ModelParallelSequential : public nn::Module {
 public:
  /// Takes the layers of `seq` (the same module objects, so seq and this share
  /// parameters) and moves part i to devices[i].
  ModelParallelSequential(const nn::Sequential& seq, std::vector<Device> devices, Boundaries boundaries = {});

  /// Moves x to part 0's device, then each part's output to the next part's.
  /// The result lives on the last part's device.
  Tensor forward(const Tensor& x) override;

  size_t num_parts() const { return devices_.size(); }  ///< Number of parts (devices).
  const std::vector<Device>& devices() const { return devices_; }  ///< The device of each part.
  const Boundaries& boundaries() const { return boundaries_; }  ///< Where the parts begin.
  PartRange part(size_t i) const { return ranges_.at(i); }  ///< Part `i`'s layer range.
  /// Parameters of part i (what an optimizer for that device would take).
  std::vector<Tensor> part_parameters(size_t i) const;
  Device output_device() const { return devices_.back(); }  ///< Where the output comes out (the last part's device).
  /// One line per part: "part 0 on cuda:0: layers 0-2 (Linear, ReLU, Linear), 200960 parameters".
  std::string placement() const;

 private:
  std::vector<std::shared_ptr<nn::Module>> layers_;
  std::vector<Device> devices_;
  Boundaries boundaries_;
  std::vector<PartRange> ranges_;
};

/// seq as a ModelParallelSequential over `devices` (empty boundaries: a balanced split).
std::shared_ptr<ModelParallelSequential> split_across_devices(const std::shared_ptr<nn::Sequential>& seq,
                                                              std::vector<Device> devices, Boundaries boundaries = {});

/// Stage `stage` of `num_stages` of seq as its own Sequential holding the same
/// module objects (parameters shared with seq) under their original names,
/// so stage.named_parameters() keys match seq's ("3.weight").
std::shared_ptr<nn::Sequential> stage_of_sequential(const nn::Sequential& seq, int stage, int num_stages,
                                                    Boundaries boundaries = {});

}  // namespace anvil::distributed
