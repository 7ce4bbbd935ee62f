#pragma once
// Dense operands for library calls that want packed NCHW buffers in one
// dtype: a view that already is one is used in place, anything else goes
// through the backend's strided, casting copy into scratch memory.
#include "kernels/cublas/device_scratch.h"

namespace anvil::cuda {

struct DenseOperand {
  DenseTemp storage;
  const void* data = nullptr;
};

inline DenseOperand dense_operand(CudaBackend& backend, const View& v, DType dtype) {
  DenseOperand op;
  if (v.dtype == dtype && v.is_contiguous()) {
    op.data = v.data;
    return op;
  }
  op.storage = dense_copy_of(backend, v, dtype);
  op.data = op.storage.view.data;
  return op;
}

// An output written by a library call: `out` itself when it is dense,
// otherwise scratch copied into `out` by commit(). With `read_first` the
// scratch starts with out's values (outputs that are also inputs).
class DenseResult {
 public:
  DenseResult(CudaBackend& backend, const View& out, bool read_first = false) : backend_(backend), out_(out) {
    if (out.is_contiguous()) {
      data_ = out.data;
      return;
    }
    temp_ = read_first ? dense_copy_of(backend, out, out.dtype)
                       : make_dense_temp(backend, out.device_index, out.dtype, out.shape);
    data_ = temp_.view.data;
  }
  void* data() const { return data_; }
  void commit() {
    if (temp_.view.data) backend_.copy(out_, temp_.view);
  }

 private:
  CudaBackend& backend_;
  View out_;
  DenseTemp temp_;
  void* data_ = nullptr;
};

}  // namespace anvil::cuda
