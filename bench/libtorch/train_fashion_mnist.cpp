// The libtorch side of bench_train's Fashion-MNIST benchmarks
// (bench/train/fashion_mnist.cpp): the same MLP and CNN as samples/models.h,
// the same first 50 shuffled-then-normalised batches of 64 real training
// images, the same AdamW (lr 1e-3, weight decay 1e-4), 3 untimed warm-up
// steps, then 3 timed iterations of 50 steps, each ending by reading the loss.
// Prints one JSON line per model: samples_per_second over wall time.
//
// The batches are not the very same images as anvil's (anvil's shuffle is its
// own Philox permutation), which does not matter for speed: every batch has
// the same shape and the models do the same work on any data.
#include <torch/torch.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kBatchSize = 64;
constexpr int64_t kSteps = 50;
constexpr int kWarmupSteps = 3;
constexpr int kIterations = 3;

std::vector<uint8_t> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

// IDX images: 16-byte header (magic, count, rows, cols), then bytes.
torch::Tensor load_images(const std::string& path) {
  std::vector<uint8_t> raw = read_gz(path);
  const int64_t n = (raw.size() - 16) / (28 * 28);
  auto bytes = torch::from_blob(raw.data() + 16, {n, 1, 28, 28}, torch::kUInt8).clone();
  return (bytes.to(torch::kFloat32) / 255.0 - 0.2860) / 0.3530;  // the sample's normalisation
}

torch::Tensor load_labels(const std::string& path) {
  std::vector<uint8_t> raw = read_gz(path);
  return torch::from_blob(raw.data() + 8, {static_cast<int64_t>(raw.size() - 8)}, torch::kUInt8).to(torch::kInt64);
}

torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 256), torch::nn::ReLU(),
                               torch::nn::Dropout(0.1), torch::nn::Linear(256, 128), torch::nn::ReLU(),
                               torch::nn::Linear(128, 10));
}

// The two conv blocks are written out: libtorch cannot nest a Sequential.
torch::nn::Sequential make_cnn() {
  using namespace torch::nn;
  return Sequential(Conv2d(Conv2dOptions(1, 32, 3).padding(1).bias(false)), BatchNorm2d(32), ReLU(), MaxPool2d(2),
                    Conv2d(Conv2dOptions(32, 64, 3).padding(1).bias(false)), BatchNorm2d(64), ReLU(), MaxPool2d(2),
                    Flatten(), Linear(64 * 7 * 7, 128), ReLU(), Dropout(0.25), Linear(128, 10));
}

void run(const char* name, torch::nn::Sequential model, const std::vector<torch::Tensor>& xs,
         const std::vector<torch::Tensor>& ys) {
  torch::manual_seed(0);
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(1e-4));
  auto step = [&](size_t i) {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(xs[i]), ys[i]);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    return loss;
  };
  for (int i = 0; i < kWarmupSteps; ++i) step(i);
  double best = 0, total_seconds = 0;
  for (int it = 0; it < kIterations; ++it) {
    auto start = std::chrono::steady_clock::now();
    torch::Tensor loss;
    for (size_t i = 0; i < xs.size(); ++i) loss = step(i);
    volatile double sink = loss.item<double>();
    (void)sink;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total_seconds += seconds;
    best = std::max(best, static_cast<double>(xs.size() * kBatchSize) / seconds);
  }
  double mean_rate = static_cast<double>(kIterations * xs.size() * kBatchSize) / total_seconds;
  std::printf(
      "{\"framework\": \"libtorch %s\", \"model\": \"%s\", \"threads\": %d, "
      "\"samples_per_second\": %.1f, \"best_iteration_samples_per_second\": %.1f}\n",
      TORCH_VERSION, name, torch::get_num_threads(), mean_rate, best);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  // Every core, as anvil's OpenMP uses (this libtorch build otherwise starts with one thread).
  torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  torch::Tensor images = load_images(dir + "/train-images-idx3-ubyte.gz");
  torch::Tensor labels = load_labels(dir + "/train-labels-idx1-ubyte.gz");
  torch::manual_seed(0);
  torch::Tensor order = torch::randperm(images.size(0));
  std::vector<torch::Tensor> xs, ys;
  for (int64_t s = 0; s < kSteps; ++s) {
    torch::Tensor idx = order.slice(0, s * kBatchSize, (s + 1) * kBatchSize);
    xs.push_back(images.index_select(0, idx).contiguous());
    ys.push_back(labels.index_select(0, idx).contiguous());
  }
  run("mlp", make_mlp(), xs, ys);
  run("cnn", make_cnn(), xs, ys);
  return 0;
}
