#pragma once
// parallel_if(parallel, body): body() on an OpenMP team when `parallel`, else
// on the calling thread with no OpenMP region around it. For kernels whose
// body calls a GEMM library (oneDNN, OpenBLAS's OpenMP build).
//
// Why not `#pragma omp parallel if (parallel)`: a false if-clause still opens
// a parallel region (an inactive one, of one thread), so the library's own
// parallel region inside it is a nested region. libgomp reuses its thread pool
// only for regions opened outside every other region; for a nested one it
// creates and joins fresh threads on each call, while the pool's idle workers
// keep spinning on the cores. On the 2-core development VM the MiniLM encode
// benchmark (bench_train BM_minilm_encode_fortunes) created about 300 threads
// per pass that way, one per two-dimensional matmul.
//
// Inside body, `#pragma omp for` and omp_get_thread_num() work either way (an
// orphaned worksharing loop outside a region runs on the one thread; inside a
// caller's region, see on_this_thread_alone).
#include <omp.h>

#include <utility>

namespace anvil::cpu {

// body() with its worksharing loops bound to this thread alone. Outside every
// region that is a plain call; inside a caller's parallel region a bare
// `omp for` would bind to the caller's team (each thread running a share of
// its own loop), so there it gets a team of one, as `if (false)` gave.
template <typename Body> void on_this_thread_alone(Body&& body) {
  if (!omp_in_parallel()) {
    std::forward<Body>(body)();
    return;
  }
#pragma omp parallel num_threads(1)
  body();
}

template <typename Body> void parallel_if(bool parallel, Body&& body) {
  if (!parallel) {
    on_this_thread_alone(std::forward<Body>(body));
    return;
  }
#pragma omp parallel
  body();
}

// The same on a team of `threads` (at least 1).
template <typename Body> void parallel_if(bool parallel, int threads, Body&& body) {
  if (!parallel) {
    on_this_thread_alone(std::forward<Body>(body));
    return;
  }
#pragma omp parallel num_threads(threads)
  body();
}

}  // namespace anvil::cpu
