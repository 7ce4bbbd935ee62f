#include "distributed/comm_hooks/counting_process_group.h"

namespace anvil::distributed {

WorkHandle CountingProcessGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  count(tensor);
  return inner_.all_reduce(tensor, op);
}

WorkHandle CountingProcessGroup::broadcast(Tensor& tensor, int root) {
  if (rank() == root) count(tensor);
  return inner_.broadcast(tensor, root);
}

WorkHandle CountingProcessGroup::all_gather(Tensor& output, const Tensor& input) {
  count(input);
  return inner_.all_gather(output, input);
}

WorkHandle CountingProcessGroup::reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) {
  count(input);
  return inner_.reduce_scatter(output, input, op);
}

WorkHandle CountingProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  count(tensor);
  return inner_.send(tensor, dst, tag);
}

WorkHandle CountingProcessGroup::recv(Tensor& tensor, int src, int tag) { return inner_.recv(tensor, src, tag); }

WorkHandle CountingProcessGroup::barrier() { return inner_.barrier(); }

WorkHandle CountingProcessGroup::all_to_all_single(Tensor& output, const Tensor& input,
                                                   const std::vector<int64_t>& output_split_sizes,
                                                   const std::vector<int64_t>& input_split_sizes) {
  count(input);
  return inner_.all_to_all_single(output, input, output_split_sizes, input_split_sizes);
}

WorkHandle CountingProcessGroup::all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) bytes_ += static_cast<int64_t>(t.nbytes());
  ++calls_;
  return inner_.all_to_all(outputs, inputs);
}

}  // namespace anvil::distributed
