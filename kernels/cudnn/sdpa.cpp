// cuDNN's fused flash attention through the cuDNN 9 backend (graph) API,
// with no cudnn_frontend: the graphs below are the ones cuDNN's runtime
// fusion engines recognise as scaled dot-product attention, written out op by
// op as cudnn_frontend lowers its SDPA nodes (CompositeSDPANode,
// CompositeSDPABackwardNode) for cuDNN 9.0-9.20:
//
// forward   S = Q @ K^T (K passed as K^T through its strides), S *= scale,
//           causal: S = row >= col ? S : -inf (GEN_INDEX x2, CMP_GE,
//           BINARY_SELECT), softmax with stats (max, sub, exp, sum,
//           Stats = max + log(sum), P = exp / sum in the io dtype), O = P @ V.
// backward  Dsum = rowsum(dO * O) (workspace, float32), P = exp(S * scale
//           [masked] - Stats), dV = P^T @ dO, dS = (dO @ V^T - Dsum) * P *
//           scale, dK = dS^T @ Q, dQ = dS @ K into a float32 accumulator
//           (workspace, zeroed) copied to dQ (IDENTITY).
//
// Every tensor is [B, H, rows, cols]; real ones are the dense operands, the
// rest virtual. Any cuDNN error while building or finalising (no engine for
// this configuration) is a decline with cuDNN's text and the problem, kept
// with the plan cache so a problem is tried once; cuDNN running out of
// memory is not kept.
#include "kernels/cudnn/sdpa.h"

#include <cudnn.h>

#include <array>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cudnn/cudnn_handles.h"

namespace anvil::cuda {
namespace {

// A cuDNN call that failed while building a graph or plan, or executing:
// declined (the flash kernels run) with this text. `transient` when cuDNN ran
// out of memory: a later call may succeed, so it is not kept as the
// problem's answer.
struct Declined {
  std::string why;
  bool transient = false;
};

void check(cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string why = what + ": " + cudnnGetErrorString(st);
  if (detail[0]) why += std::string(" (") + detail + ")";
  throw Declined{why, st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                          st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED};
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) : type_(type) {
    check(cudnnBackendCreateDescriptor(type, &d_), "create descriptor of type " + std::to_string(type));
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : type_(o.type_), d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* value) {
    // cuDNN has no names for its enums: the numbers are cudnn_graph.h's.
    check(cudnnBackendSetAttribute(d_, name, type, count, value), "cudnnBackendSetAttribute(attribute " +
                                                                      std::to_string(name) + " of descriptor type " +
                                                                      std::to_string(type_) + ")");
  }
  void set_desc(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value) {
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  void finalize(const char* what) { check(cudnnBackendFinalize(d_), what); }

 private:
  cudnnBackendDescriptorType_t type_;
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::array<int64_t, 4>;

Dims dense_strides(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

// The real tensors' ids in the variant pack; virtual ones count up from kFirstVirtual.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kGradOut,
  kGradQ,
  kGradK,
  kGradV,
  kScale,
  kNegInf,
  kOne,
  kSoftmaxSum,
  kGradQAccum,
  kFirstVirtual = 100
};

// The op graph under construction: owns every descriptor it creates.
class Graph {
 public:
  explicit Graph(cudnnDataType_t io) : io_(io) {}

  cudnnBackendDescriptor_t tensor(const Dims& dims, const Dims& strides, cudnnDataType_t type, int64_t uid,
                                  bool is_virtual, bool by_value = false) {
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    const int64_t alignment = 16;
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    t.finalize("tensor descriptor");
    return keep(std::move(t));
  }
  cudnnBackendDescriptor_t real(const Dims& dims, const Dims& strides, cudnnDataType_t type, int64_t uid) {
    return tensor(dims, strides, type, uid, false);
  }
  cudnnBackendDescriptor_t virt(const Dims& dims, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return tensor(dims, dense_strides(dims), type, next_virtual_++, true);
  }
  cudnnBackendDescriptor_t virt(const Dims& dims, const Dims& strides, cudnnDataType_t type) {
    return tensor(dims, strides, type, next_virtual_++, true);
  }
  // A float32 scalar passed by value in the variant pack.
  cudnnBackendDescriptor_t scalar(int64_t uid) {
    return tensor({1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, uid, false, true);
  }

  struct Pointwise {
    cudnnPointwiseMode_t mode;
    cudnnBackendDescriptor_t x, b = nullptr, t = nullptr;
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    int64_t axis = -1;  // GEN_INDEX only
  };
  cudnnBackendDescriptor_t pointwise(const Pointwise& p, cudnnBackendDescriptor_t y) {
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &p.mode);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &p.compute);
    if (p.axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &p.axis);
    pw.finalize("pointwise descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get());
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, p.x);
    if (p.b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, p.b);
    if (p.t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, p.t);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    op.finalize("pointwise operation");
    keep(std::move(pw));
    ops_.push_back(keep(std::move(op)));
    return y;
  }
  // y = x (op) b on float scores [dims].
  cudnnBackendDescriptor_t binary(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                  const Dims& dims) {
    return pointwise({.mode = mode, .x = x, .b = b}, virt(dims));
  }
  cudnnBackendDescriptor_t unary(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, const Dims& dims) {
    return pointwise({.mode = mode, .x = x}, virt(dims));
  }

  cudnnBackendDescriptor_t reduce(cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Desc r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    r.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    r.finalize("reduction descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r.get());
    op.finalize("reduction operation");
    keep(std::move(r));
    ops_.push_back(keep(std::move(op)));
    return y;
  }

  cudnnBackendDescriptor_t matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    Desc mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    mm.finalize("matmul descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm.get());
    op.finalize("matmul operation");
    keep(std::move(mm));
    ops_.push_back(keep(std::move(op)));
    return c;
  }

  // y: the same elements as x under other dims/strides (a transpose).
  cudnnBackendDescriptor_t reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    op.finalize("reshape operation");
    ops_.push_back(keep(std::move(op)));
    return y;
  }

  // Top-left causal mask on scores [dims]: keys past the query's row get -inf.
  cudnnBackendDescriptor_t causal(cudnnBackendDescriptor_t scores, const Dims& dims) {
    // The indices are computed in int32, as cudnn_frontend sets them: the
    // runtime fusion engines match the causal pattern on these types.
    cudnnBackendDescriptor_t row =
        pointwise({.mode = CUDNN_POINTWISE_GEN_INDEX, .x = scores, .compute = CUDNN_DATA_INT32, .axis = 2},
                  virt(dims, CUDNN_DATA_INT32));
    cudnnBackendDescriptor_t col =
        pointwise({.mode = CUDNN_POINTWISE_GEN_INDEX, .x = scores, .compute = CUDNN_DATA_INT32, .axis = 3},
                  virt(dims, CUDNN_DATA_INT32));
    cudnnBackendDescriptor_t keep_it =
        pointwise({.mode = CUDNN_POINTWISE_CMP_GE, .x = row, .b = col, .compute = CUDNN_DATA_BOOLEAN},
                  virt(dims, CUDNN_DATA_BOOLEAN));
    return pointwise({.mode = CUDNN_POINTWISE_BINARY_SELECT, .x = scores, .b = scalar(kNegInf), .t = keep_it},
                     virt(dims));
  }

  cudnnDataType_t io() const { return io_; }

  // Finalises the op graph, asks the heuristics for engine configurations
  // and keeps the first one that finalises as a plan.
  Desc plan(cudnnHandle_t handle, int64_t* workspace) {
    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()),
              ops_.data());
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    graph.finalize("operation graph");
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.get());
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    heur.finalize("engine heuristics");
    int64_t count = 0;
    check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                   nullptr),
          "engine heuristics results");
    if (count == 0) throw Declined{"cuDNN's heuristics found no engine for this attention graph"};
    std::vector<Desc> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                   &count, raw.data()),
          "engine heuristics results");
    std::string last = "no engine configuration finalised";
    bool transient = false;  // some configuration failed for want of memory
    for (int64_t i = 0; i < count; ++i) {
      // Any error in one configuration moves on to the next.
      std::optional<Desc> plan;
      try {
        plan.emplace(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
        plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, raw[static_cast<size_t>(i)]);
        plan->finalize("execution plan");
        int64_t got = 0;
        check(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                                       workspace),
              "plan workspace size");
      } catch (const Declined& d) {
        last = d.why;
        transient = transient || d.transient;
        continue;
      }
      // The plan refers to the graph and its engine configuration: they live
      // as long as this Graph, which the plan cache keeps beside the plan.
      keep(std::move(graph));
      keep(std::move(heur));
      for (Desc& c : configs) keep(std::move(c));
      return std::move(*plan);
    }
    throw Declined{
        "none of cuDNN's " + std::to_string(count) + " engine configurations took the graph (last: " + last + ")",
        transient};
  }

 private:
  cudnnBackendDescriptor_t keep(Desc d) {
    owned_.push_back(std::move(d));
    return owned_.back().get();
  }
  cudnnDataType_t io_;
  int64_t next_virtual_ = kFirstVirtual;
  std::vector<Desc> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
};

struct Shapes {
  Dims q, k_t, v, v_t, o, stats, scores, scores_t;
  Dims k_t_strides, v_t_strides, stats_strides, scores_t_strides;
};

Shapes shapes_of(const CudnnSdpaProblem& p) {
  const int64_t b = p.batch, h = p.heads, l = p.len_q, s = p.len_k, e = p.dim_qk, ev = p.dim_v;
  Shapes x;
  x.q = {b, h, l, e};
  x.k_t = {b, h, e, s};  // K [B, H, S, E] read transposed
  x.k_t_strides = {h * s * e, s * e, 1, e};
  x.v = {b, h, s, ev};
  x.v_t = {b, h, ev, s};
  x.v_t_strides = {h * s * ev, s * ev, 1, ev};
  x.o = {b, h, l, ev};
  x.stats = {b, h, l, 1};
  x.stats_strides = {h * l, l, 1, 1};
  x.scores = {b, h, l, s};
  x.scores_t = {b, h, s, l};
  x.scores_t_strides = {h * l * s, l * s, 1, s};
  return x;
}

void build_forward(Graph& g, const CudnnSdpaProblem& p) {
  const Shapes x = shapes_of(p);
  const cudnnBackendDescriptor_t q = g.real(x.q, dense_strides(x.q), g.io(), kQ),
                                 k_t = g.real(x.k_t, x.k_t_strides, g.io(), kK),
                                 v = g.real(x.v, dense_strides(x.v), g.io(), kV),
                                 o = g.real(x.o, dense_strides(x.o), g.io(), kO),
                                 stats = g.real(x.stats, x.stats_strides, CUDNN_DATA_FLOAT, kStats);
  cudnnBackendDescriptor_t s = g.matmul(q, k_t, g.virt(x.scores));
  s = g.binary(CUDNN_POINTWISE_MUL, s, g.scalar(kScale), x.scores);
  if (p.causal) s = g.causal(s, x.scores);
  const cudnnBackendDescriptor_t max = g.reduce(CUDNN_REDUCE_TENSOR_MAX, s, g.virt(x.stats));
  const cudnnBackendDescriptor_t e =
      g.unary(CUDNN_POINTWISE_EXP, g.binary(CUDNN_POINTWISE_SUB, s, max, x.scores), x.scores);
  const cudnnBackendDescriptor_t sum = g.reduce(CUDNN_REDUCE_TENSOR_ADD, e, g.virt(x.stats));
  g.pointwise({.mode = CUDNN_POINTWISE_ADD, .x = max, .b = g.unary(CUDNN_POINTWISE_LOG, sum, x.stats)}, stats);
  const cudnnBackendDescriptor_t probs =
      g.pointwise({.mode = CUDNN_POINTWISE_DIV, .x = e, .b = sum}, g.virt(x.scores, g.io()));
  g.matmul(probs, v, o);
}

void build_backward(Graph& g, const CudnnSdpaProblem& p) {
  const Shapes x = shapes_of(p);
  const Dims k{p.batch, p.heads, p.len_k, p.dim_qk};
  const cudnnBackendDescriptor_t q = g.real(x.q, dense_strides(x.q), g.io(), kQ),
                                 k_t = g.real(x.k_t, x.k_t_strides, g.io(), kK),
                                 v_t = g.real(x.v_t, x.v_t_strides, g.io(), kV),
                                 o = g.real(x.o, dense_strides(x.o), g.io(), kO),
                                 d_o = g.real(x.o, dense_strides(x.o), g.io(), kGradOut),
                                 stats = g.real(x.stats, x.stats_strides, CUDNN_DATA_FLOAT, kStats),
                                 d_q = g.real(x.q, dense_strides(x.q), g.io(), kGradQ),
                                 d_k = g.real(k, dense_strides(k), g.io(), kGradK),
                                 d_v = g.real(x.v, dense_strides(x.v), g.io(), kGradV), scale = g.scalar(kScale);
  // Dsum = rowsum(dO * O), kept in the workspace (cuDNN's pattern stores it).
  const cudnnBackendDescriptor_t row_dot =
      g.reduce(CUDNN_REDUCE_TENSOR_ADD, g.binary(CUDNN_POINTWISE_MUL, d_o, o, x.o), g.virt(x.stats));
  const cudnnBackendDescriptor_t softmax_sum =
      g.pointwise({.mode = CUDNN_POINTWISE_MUL, .x = row_dot, .b = g.scalar(kOne)},
                  g.real(x.stats, x.stats_strides, CUDNN_DATA_FLOAT, kSoftmaxSum));
  // P recomputed from the saved stats.
  cudnnBackendDescriptor_t s = g.matmul(q, k_t, g.virt(x.scores));
  s = g.binary(CUDNN_POINTWISE_MUL, s, scale, x.scores);
  s = g.binary(CUDNN_POINTWISE_SUB, s, stats, x.scores);
  if (p.causal) s = g.causal(s, x.scores);
  const cudnnBackendDescriptor_t probs = g.unary(CUDNN_POINTWISE_EXP, s, x.scores);
  g.matmul(g.reshape(probs, g.virt(x.scores_t, x.scores_t_strides, g.io())), d_o, d_v);
  // dS = P * (dO @ V^T - Dsum) * scale.
  cudnnBackendDescriptor_t ds = g.matmul(d_o, v_t, g.virt(x.scores));
  ds = g.binary(CUDNN_POINTWISE_SUB, ds, softmax_sum, x.scores);
  ds = g.binary(CUDNN_POINTWISE_MUL, ds, probs, x.scores);
  ds = g.binary(CUDNN_POINTWISE_MUL, ds, scale, x.scores);
  g.matmul(g.reshape(ds, g.virt(x.scores_t, x.scores_t_strides, g.io())), q, d_k);
  const cudnnBackendDescriptor_t k_rows = g.reshape(k_t, g.virt(k, dense_strides(k), g.io()));
  const cudnnBackendDescriptor_t dq_accum =
      g.matmul(ds, k_rows, g.real(x.q, dense_strides(x.q), CUDNN_DATA_FLOAT, kGradQAccum));
  g.pointwise({.mode = CUDNN_POINTWISE_IDENTITY, .x = dq_accum}, d_q);
}

// Every tensor and operation descriptor of the forward or backward graph.
// cuDNN's fused attention takes float16 and bfloat16 operands only.
std::unique_ptr<Graph> build_graph(const CudnnSdpaProblem& p, bool backward) {
  if (p.dtype != DType::Float16 && p.dtype != DType::BFloat16)
    throw Declined{std::string("cuDNN's fused attention takes float16 and bfloat16 operands, not ") +
                   dtype_name(p.dtype)};
  auto g = std::make_unique<Graph>(cudnn_type("cuDNN attention", p.dtype));
  if (backward) {
    build_backward(*g, p);
  } else {
    build_forward(*g, p);
  }
  return g;
}

// A finalised plan (with every descriptor it was built from), or why there is none.
struct Plan {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Desc> plan;
  int64_t workspace = 0;
  std::string declined;
  bool transient = false;  // declined for want of memory: not kept in the cache
};

std::shared_ptr<Plan> make_plan(cudnnHandle_t handle, const CudnnSdpaProblem& p, bool backward) {
  auto out = std::make_shared<Plan>();
  try {
    std::unique_ptr<Graph> g = build_graph(p, backward);
    out->plan = std::make_unique<Desc>(g->plan(handle, &out->workspace));
    out->graph = std::move(g);
  } catch (const Declined& d) {
    out->declined = "cuDNN graph for " + cudnn_sdpa_text(p, backward) + ": " + d.why;
    out->transient = d.transient;
  }
  return out;
}

// Plans and problem-level declines per (cuDNN handle, problem). The handle's
// address is part of the key: cudnn_handles.h keeps every handle for the life
// of the process and never frees one, so an address never comes back for
// another handle and a plan is never used with a handle it was not built on.
struct PlanCache {
  // More distinct problems than this (a dynamic-shape workload) empties the
  // cache rather than tracking use: plans are rebuilt on demand, and calls
  // holding a plan keep it alive through the shared_ptr.
  static constexpr size_t kMaxPlans = 512;
  std::mutex mu;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans;
};

// Allocated once and never destroyed: destroying the descriptors at exit
// would call into cuDNN after the CUDA runtime has been torn down.
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;
  return *cache;
}

std::shared_ptr<Plan> cached_plan(cudnnHandle_t handle, const CudnnSdpaProblem& p, bool backward) {
  PlanCache& cache = plan_cache();
  const std::vector<int64_t> key = {reinterpret_cast<int64_t>(handle),
                                    backward,
                                    static_cast<int64_t>(p.dtype),
                                    p.batch,
                                    p.heads,
                                    p.len_q,
                                    p.len_k,
                                    p.dim_qk,
                                    p.dim_v,
                                    p.causal};
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) return it->second;
  }
  std::shared_ptr<Plan> plan = make_plan(handle, p, backward);  // slow: outside the lock
  if (plan->transient) return plan;
  std::lock_guard<std::mutex> lock(cache.mu);
  if (cache.plans.size() >= PlanCache::kMaxPlans) cache.plans.clear();
  return cache.plans.emplace(key, plan).first->second;
}

// Execution failures are call-level: the plan stays cached.
CudnnSdpaOutcome execute(cudnnHandle_t handle, const Plan& plan, const std::string& problem, std::vector<int64_t> uids,
                         std::vector<void*> ptrs, void* workspace) {
  try {
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(ptrs.size()),
             ptrs.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize("variant pack");
    check(cudnnBackendExecute(handle, plan.plan->get(), pack.get()), "cudnnBackendExecute");
  } catch (const Declined& d) {
    return {"cuDNN attention for " + problem + ": " + d.why, false};
  }
  return {};
}

// The workspace, or a call-level decline when the allocator has no room.
CudnnSdpaOutcome allocate(CudaRuntime& backend, int device, size_t bytes, const std::string& problem, Scratch* ws) {
  try {
    *ws = Scratch(backend, device, bytes);
  } catch (const Error& e) {
    return {"cuDNN attention workspace of " + std::to_string(bytes) + " bytes for " + problem + ": " + e.what(), false};
  }
  return {};
}

// The runtime library's version, not the headers': the GPU machine may load
// another cuDNN 9 (PyTorch's wheel).
std::string version_gate(const CudnnSdpaProblem& p, bool backward) {
  const size_t v = cudnnGetVersion();
  if (v < 90000) return "cuDNN " + std::to_string(v) + " is older than 9.0 (" + cudnn_sdpa_text(p, backward) + ")";
  // Before 9.16 cudnn_frontend adds a padding mask to the backward graph when
  // S is not a multiple of 128 (a cuDNN bug); this path does not.
  if (backward && v < 91600 && p.len_k % 128 != 0)
    return "cuDNN " + std::to_string(v) +
           " (< 9.16) needs a padding-mask workaround for the backward with S % 128 != 0 (" +
           cudnn_sdpa_text(p, backward) + ")";
  return "";
}

constexpr size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

bool cudnn_sdpa_available() { return true; }

std::string cudnn_sdpa_check_ops(const CudnnSdpaProblem& p, bool backward) {
  try {
    build_graph(p, backward);
  } catch (const Declined& d) {
    return "cuDNN graph for " + cudnn_sdpa_text(p, backward) + ": " + d.why;
  }
  return "";
}

CudnnSdpaOutcome cudnn_sdpa_forward(CudaRuntime& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                                    const CudnnSdpaForwardArgs& a) {
  if (std::string why = version_gate(p, false); !why.empty()) return {why, true};
  if (!cudnn_sdpa_aligned(a)) return {"an operand is not 16-byte aligned (" + cudnn_sdpa_text(p, false) + ")", false};
  cudnnHandle_t handle = cudnn_handle(device, s);
  const std::shared_ptr<Plan> plan = cached_plan(handle, p, false);
  if (!plan->plan) return {plan->declined, !plan->transient};
  Scratch ws;
  if (CudnnSdpaOutcome o =
          allocate(backend, device, static_cast<size_t>(plan->workspace), cudnn_sdpa_text(p, false), &ws);
      !o.ran())
    return o;
  float scale = p.scale, neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kStats, kScale};
  std::vector<void*> ptrs = {
      const_cast<void*>(a.q), const_cast<void*>(a.k), const_cast<void*>(a.v), a.out, a.lse, &scale};
  if (p.causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&neg_inf);
  }
  return execute(handle, *plan, cudnn_sdpa_text(p, false), std::move(uids), std::move(ptrs), ws.get());
}

CudnnSdpaOutcome cudnn_sdpa_backward(CudaRuntime& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                                     const CudnnSdpaBackwardArgs& a) {
  if (std::string why = version_gate(p, true); !why.empty()) return {why, true};
  if (!cudnn_sdpa_aligned(a)) return {"an operand is not 16-byte aligned (" + cudnn_sdpa_text(p, true) + ")", false};
  cudnnHandle_t handle = cudnn_handle(device, s);
  const std::shared_ptr<Plan> plan = cached_plan(handle, p, true);
  if (!plan->plan) return {plan->declined, !plan->transient};
  // One allocation: cuDNN's workspace, then Dsum [B, H, L] and the dQ accumulator [B, H, L, E] in float32.
  const size_t rows = static_cast<size_t>(p.batch * p.heads * p.len_q);
  const size_t plan_bytes = align_up(static_cast<size_t>(plan->workspace));
  const size_t sum_bytes = align_up(rows * sizeof(float));
  const size_t accum_bytes = rows * static_cast<size_t>(p.dim_qk) * sizeof(float);
  Scratch ws;
  if (CudnnSdpaOutcome o =
          allocate(backend, device, plan_bytes + sum_bytes + accum_bytes, cudnn_sdpa_text(p, true), &ws);
      !o.ran())
    return o;
  char* base = ws.as<char>();
  void* softmax_sum = base + plan_bytes;
  void* dq_accum = base + plan_bytes + sum_bytes;
  // cuDNN before 9.6 expects the accumulator zeroed (cudnn_frontend memsets it then); harmless after.
  ANVIL_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, accum_bytes, s));
  float scale = p.scale, neg_inf = -std::numeric_limits<float>::infinity(), one = 1.0f;
  std::vector<int64_t> uids = {kQ,     kK,     kV,     kO,   kGradOut,    kStats,     kGradQ,
                               kGradK, kGradV, kScale, kOne, kSoftmaxSum, kGradQAccum};
  std::vector<void*> ptrs = {const_cast<void*>(a.q),
                             const_cast<void*>(a.k),
                             const_cast<void*>(a.v),
                             const_cast<void*>(a.out),
                             const_cast<void*>(a.grad_out),
                             const_cast<float*>(a.lse),
                             a.grad_q,
                             a.grad_k,
                             a.grad_v,
                             &scale,
                             &one,
                             softmax_sum,
                             dq_accum};
  if (p.causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&neg_inf);
  }
  return execute(handle, *plan, cudnn_sdpa_text(p, true), std::move(uids), std::move(ptrs), base);
}

}  // namespace anvil::cuda
