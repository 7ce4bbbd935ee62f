#include "distributed/process_group/process_group.h"

#include <mutex>
#include <numeric>

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"
#include "core/factory.h"

namespace anvil::distributed {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "Sum";
    case ReduceOp::Avg:
      return "Avg";
    case ReduceOp::Max:
      return "Max";
    case ReduceOp::Min:
      return "Min";
  }
  return "?";
}

namespace {
class CompletedWork : public Work {
 public:
  explicit CompletedWork(std::exception_ptr error) : error_(std::move(error)) {}
  void wait() override {
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override { return true; }

 private:
  std::exception_ptr error_;
};
}  // namespace

WorkHandle completed_work(std::exception_ptr error) { return std::make_shared<CompletedWork>(std::move(error)); }

std::vector<WorkHandle> ProcessGroup::batch_isend_irecv(const std::vector<P2POp>& ops) {
  std::vector<WorkHandle> works;
  works.reserve(ops.size());
  for (const P2POp& op : ops) {
    Tensor t = op.tensor;
    works.push_back(op.kind == P2POp::Kind::Send ? send(t, op.peer, op.tag) : recv(t, op.peer, op.tag));
  }
  return works;
}

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Rows per rank from a split list (empty: equal blocks).
std::vector<int64_t> rows_per_rank(const std::string& what, const char* name, const std::vector<int64_t>& splits,
                                   int64_t rows, int size) {
  if (splits.empty()) {
    ANVIL_CHECK(rows % size == 0, what, ": ", name, " is empty, so the first dimension (", rows,
                ") is cut into equal blocks, but it does not divide by the group size ", size,
                "; pass the split sizes");
    return std::vector<int64_t>(static_cast<size_t>(size), rows / size);
  }
  ANVIL_CHECK(static_cast<int>(splits.size()) == size, what, ": ", name, " ", list_str(splits), " has ", splits.size(),
              " entries; expected one per rank of the group (", size, ")");
  for (int64_t s : splits) ANVIL_CHECK(s >= 0, what, ": ", name, " ", list_str(splits), " has a negative entry");
  int64_t total = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  ANVIL_CHECK(total == rows, what, ": ", name, " ", list_str(splits), " sums to ", total,
              " rows, but the tensor's first dimension is ", rows);
  return splits;
}

int64_t row_numel(const Tensor& t) {
  int64_t n = 1;
  for (size_t d = 1; d < t.shape().size(); ++d) n *= t.shape()[d];
  return n;
}

}  // namespace

AllToAllPlan plan_all_to_all(const std::string& what, const Tensor& output, const Tensor& input,
                             const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, int rank, int size) {
  ANVIL_CHECK(output.defined() && input.defined(), what, ": the ", output.defined() ? "input" : "output",
              " tensor is undefined");
  ANVIL_CHECK(output.dtype() == input.dtype(), what, ": output is ", dtype_name(output.dtype()), " but input is ",
              dtype_name(input.dtype()));
  ANVIL_CHECK(output.dim() >= 1 && input.dim() >= 1, what, ": output (shape ", output.shape_str(),
              ") and input (shape ", input.shape_str(), ") need a first dimension to split");
  const int64_t row_in = row_numel(input), row_out = row_numel(output);
  ANVIL_CHECK(row_in == row_out, what, ": an output row (shape ", output.shape_str(), ") has ", row_out,
              " elements but an input row (shape ", input.shape_str(), ") has ", row_in,
              "; the dimensions after the first must hold the same number of elements");
  std::vector<int64_t> in_rows = rows_per_rank(what, "input_split_sizes", input_split_sizes, input.shape()[0], size);
  std::vector<int64_t> out_rows =
      rows_per_rank(what, "output_split_sizes", output_split_sizes, output.shape()[0], size);
  AllToAllPlan plan;
  int64_t in_off = 0, out_off = 0;
  for (int r = 0; r < size; ++r) {
    plan.send_counts.push_back(in_rows[static_cast<size_t>(r)] * row_in);
    plan.send_offsets.push_back(in_off);
    in_off += plan.send_counts.back();
    plan.recv_counts.push_back(out_rows[static_cast<size_t>(r)] * row_out);
    plan.recv_offsets.push_back(out_off);
    out_off += plan.recv_counts.back();
  }
  const auto me = static_cast<size_t>(rank);
  ANVIL_CHECK(plan.send_counts[me] == plan.recv_counts[me], what, ": this rank (", rank, ") sends itself ", in_rows[me],
              " rows (input_split_sizes) but expects ", out_rows[me], " rows from itself (output_split_sizes)");
  return plan;
}

WorkHandle ProcessGroup::all_to_all_single(Tensor&, const Tensor&, const std::vector<int64_t>&,
                                           const std::vector<int64_t>&) {
  fail("all_to_all_single: the ", backend_name(), " process group does not implement all_to_all");
}

namespace {

// all_to_all's Work: the packed exchange, then the copies into the outputs.
class UnpackWork : public Work {
 public:
  UnpackWork(WorkHandle inner, Tensor packed_in, Tensor packed_out, std::vector<Tensor> outputs)
      : inner_(std::move(inner)),
        packed_in_(std::move(packed_in)),
        packed_out_(std::move(packed_out)),
        outputs_(std::move(outputs)) {}
  void wait() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      done_ = true;
      try {
        inner_->wait();
        NoGradGuard no_grad;
        int64_t off = 0;
        for (Tensor& out : outputs_) {
          const int64_t n = out.numel();
          if (n > 0) out.copy_(packed_out_.narrow(0, off, n).view(out.shape()));
          off += n;
        }
      } catch (...) {
        error_ = std::current_exception();
      }
      packed_in_ = Tensor();
      packed_out_ = Tensor();
    }
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  std::mutex mu_;
  WorkHandle inner_;
  Tensor packed_in_, packed_out_;
  std::vector<Tensor> outputs_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace

WorkHandle ProcessGroup::all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
  const std::string what =
      "all_to_all (" + backend_name() + ", rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ")";
  ANVIL_CHECK(static_cast<int>(inputs.size()) == size() && static_cast<int>(outputs.size()) == size(), what, ": got ",
              inputs.size(), " inputs and ", outputs.size(), " outputs; expected one tensor per rank of the group (",
              size(), ") in each");
  std::vector<int64_t> in_counts, out_counts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const Tensor* t : {&inputs[i], static_cast<const Tensor*>(&outputs[i])}) {
      const char* role = t == &inputs[i] ? "inputs" : "outputs";
      ANVIL_CHECK(t->defined(), what, ": ", role, "[", i, "] is undefined");
      ANVIL_CHECK(t->dtype() == inputs[0].dtype() && t->device() == inputs[0].device(), what, ": ", role, "[", i,
                  "] is ", dtype_name(t->dtype()), " on ", t->device().str(), " but inputs[0] is ",
                  dtype_name(inputs[0].dtype()), " on ", inputs[0].device().str(),
                  "; every tensor must have one dtype and device");
    }
    in_counts.push_back(inputs[i].numel());
    out_counts.push_back(outputs[i].numel());
  }
  NoGradGuard no_grad;
  const int64_t total_in = std::accumulate(in_counts.begin(), in_counts.end(), int64_t{0});
  const int64_t total_out = std::accumulate(out_counts.begin(), out_counts.end(), int64_t{0});
  Tensor packed_in = empty({total_in}, inputs[0].options());
  Tensor packed_out = empty({total_out}, inputs[0].options());
  int64_t off = 0;
  for (const Tensor& in : inputs) {
    if (in.numel() > 0) packed_in.narrow(0, off, in.numel()).copy_(in.reshape({in.numel()}));
    off += in.numel();
  }
  WorkHandle inner = all_to_all_single(packed_out, packed_in, out_counts, in_counts);
  return std::make_shared<UnpackWork>(std::move(inner), packed_in, packed_out, outputs);
}

}  // namespace anvil::distributed
