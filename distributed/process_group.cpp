#include "distributed/process_group.h"

namespace anvil::distributed {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Avg: return "Avg";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Min: return "Min";
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

}  // namespace anvil::distributed
