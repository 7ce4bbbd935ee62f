// The choice between cuDNN's fused attention and the flash kernels
// (attention_choice.h). Compiled in both CUDA builds: on the emulated GPU
// cudnn_sdpa_available() is false and every call runs the flash kernels.
#include "kernels/cuda/attention_choice_run.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "core/base/error.h"
#include "kernels/cuda/launch/algo_cache.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cudnn/sdpa.h"

namespace anvil::cuda {
namespace {

// The last decision per direction, for tests and benchmarks to read.
thread_local SdpaDecision last_decision[2];

void decide(bool backward, SdpaPath path, std::string why) { last_decision[backward] = {path, std::move(why)}; }

// Each distinct message once per process: a decline repeats on every call.
// Callers put the problem in the text, so another shape's decline still shows.
void log_once(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(why).second)
    std::fprintf(stderr, "anvil: scaled_dot_product_attention runs the flash kernels: %s\n", why.c_str());
}

AlgoCache<SdpaDecision>& choices() {
  static AlgoCache<SdpaDecision> cache;
  return cache;
}

// One CUDA event, destroyed with its owner (also when a check throws).
class Event {
 public:
  Event() { ANVIL_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Milliseconds per run of `run`, over `reps` runs after one warm-up.
float time_ms(cudaStream_t s, const std::function<void()>& run, int reps) {
  Event start, stop;
  run();
  ANVIL_CUDA_CHECK(cudaEventRecord(start.get(), s));
  for (int i = 0; i < reps; ++i) run();
  ANVIL_CUDA_CHECK(cudaEventRecord(stop.get(), s));
  ANVIL_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  ANVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / static_cast<float>(reps);
}

std::string fmt_ms(float ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", static_cast<double>(ms));
  return buf;
}

}  // namespace

SdpaSetting sdpa_setting() {
  const char* env = std::getenv("ANVIL_SDPA_BACKEND");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) return SdpaSetting::Auto;
  if (std::strcmp(env, "cudnn") == 0) return SdpaSetting::Cudnn;
  if (std::strcmp(env, "flash") == 0) return SdpaSetting::Flash;
  fail("scaled_dot_product_attention: ANVIL_SDPA_BACKEND=", env, " is not one of auto, cudnn, flash");
}

SdpaDecision last_sdpa_decision(bool backward) { return last_decision[backward]; }

std::string sdpa_cudnn_out_of_scope(const SdpaRequest& r) {
  if (r.dtype != DType::BFloat16 && r.dtype != DType::Float16)
    return std::string("cuDNN's flash attention takes bfloat16 and float16 only, not ") + dtype_name(r.dtype);
  if (r.has_mask) return "an attn_mask (the cuDNN path covers causal and no mask)";
  if (r.dropout) return "dropout (the cuDNN path runs without dropout: its Philox stream is not anvil's)";
  const CudnnSdpaProblem& p = r.problem;
  for (int64_t d : {p.dim_qk, p.dim_v})
    if (d % 8 != 0 || d > 128 || d <= 0)
      return "head dim " + std::to_string(d) + " (the cuDNN path takes multiples of 8 up to 128)";
  if (p.len_k == 0) return "no keys";
  if (p.batch * p.heads * p.len_q == 0) return "an empty problem (no query rows)";
  return "";
}

bool run_sdpa(const SdpaRequest& r, cudaStream_t s, const SdpaRunners& run) {
  const bool bwd = r.backward;
  const SdpaSetting setting = sdpa_setting();
  if (setting == SdpaSetting::Flash) {
    run.flash();
    decide(bwd, SdpaPath::Flash, "forced by ANVIL_SDPA_BACKEND=flash");
    return false;
  }
  const std::string problem = " (" + cudnn_sdpa_text(r.problem, bwd) + ")";
  std::string why = sdpa_cudnn_out_of_scope(r);
  if (why.empty() && !cudnn_sdpa_available()) why = "cuDNN is not emulated (the emulated GPU has no cuDNN)";
  // This call's pointers, not the problem: checked before the cached choice
  // so a misaligned call neither runs cuDNN nor is remembered.
  if (why.empty() && !r.aligned) why = "an operand that is not 16-byte aligned";
  if (!why.empty()) {
    run.flash();
    if (setting == SdpaSetting::Cudnn) log_once("ANVIL_SDPA_BACKEND=cudnn but " + why + problem);
    decide(bwd, SdpaPath::Flash, "cuDNN does not take " + why);
    return false;
  }
  if (setting == SdpaSetting::Cudnn) {
    const CudnnSdpaOutcome o = run.cudnn();
    if (o.ran()) {
      decide(bwd, SdpaPath::Cudnn, "forced by ANVIL_SDPA_BACKEND=cudnn");
      return true;
    }
    run.flash();
    log_once("cuDNN declined: " + o.why);  // sdpa.cpp names the problem
    decide(bwd, SdpaPath::Flash, "cuDNN declined: " + o.why);
    return false;
  }
  // auto
  const CudnnSdpaProblem& p = r.problem;
  const std::vector<int64_t> key = {
      bwd, r.device, static_cast<int64_t>(p.dtype), p.batch, p.heads, p.len_q, p.len_k, p.dim_qk, p.dim_v, p.causal};
  if (std::optional<SdpaDecision> known = choices().find(key)) {
    if (known->path == SdpaPath::Cudnn && run.cudnn().ran()) {
      decide(bwd, SdpaPath::Cudnn, "auto (cached): " + known->why);
      return true;
    }
    run.flash();
    decide(bwd, SdpaPath::Flash, "auto (cached): " + known->why);
    return false;
  }
  // A stream being captured into a CUDA graph cannot be synchronized for the
  // timing, and a plan built mid-capture would put cuDNN's setup in the
  // graph: the flash kernels run, and a later uncaptured call decides.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ANVIL_CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    run.flash();
    decide(bwd, SdpaPath::Flash, "auto: stream capture, undecided (timed on a later uncaptured call)");
    return false;
  }
  // Builds (or declines) the plan once; only a problem-level decline is kept.
  const CudnnSdpaOutcome first = run.cudnn();
  if (!first.ran()) {
    run.flash();
    log_once("cuDNN declined: " + first.why);
    const SdpaDecision d{SdpaPath::Flash, "cuDNN declined: " + first.why};
    if (first.problem_level) choices().insert(key, d);
    decide(bwd, d.path, d.why);
    return false;
  }
  constexpr int kReps = 3;
  CudnnSdpaOutcome failed;
  const float flash_ms = time_ms(s, run.flash, kReps);
  const float cudnn_ms = time_ms(
      s,
      [&] {
        if (CudnnSdpaOutcome o = run.cudnn(); !o.ran()) failed = std::move(o);
      },
      kReps);
  const bool cudnn_wins = failed.ran() && cudnn_ms < flash_ms;
  const SdpaDecision d{
      cudnn_wins ? SdpaPath::Cudnn : SdpaPath::Flash,
      "cudnn " + (failed.ran() ? fmt_ms(cudnn_ms) : "failed (" + failed.why + ")") + " vs flash " + fmt_ms(flash_ms)};
  // A call-level failure while timing leaves the problem undecided.
  if (failed.ran() || failed.problem_level) choices().insert(key, d);
  if (!cudnn_wins) run.flash();  // the result the caller keeps comes from the chosen path
  decide(bwd, d.path, "auto: " + d.why);
  return cudnn_wins;
}

}  // namespace anvil::cuda
