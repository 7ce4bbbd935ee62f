// The main job: trains a two-layer perceptron on Fashion-MNIST (Debian's
// dataset-fashion-mnist) with nothing but core ops and autograd, then
// reports test accuracy. The nn issue replaces this with a CNN built from
// nn modules and the Trainer.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <anvil/anvil.h>

#include "nn/data/idx.h"

using namespace anvil;

namespace {

struct Split {
  Tensor images;  // [N, 784] float32 in [0, 1]
  Tensor labels;  // [N] int64
};

Split load(const std::string& dir, const std::string& prefix) {
  Tensor images = nn::data::read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  Tensor labels = nn::data::read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  ANVIL_CHECK(images.size(0) == labels.size(0), "fashion_mnist: ", images.size(0), " images but ", labels.size(0),
              " labels in ", dir);
  return {images.to(kFloat32).reshape({images.size(0), -1}) / 255.0, labels.to(kInt64)};
}

// Kaiming-uniform weights like PyTorch's nn.Linear default.
Tensor init_weight(int64_t out, int64_t in) {
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  return (rand({out, in}) * (2 * bound) - bound).requires_grad_();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fashion-MNIST MLP trained with anvil core ops"};
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string device_name = "cpu";
  int epochs = 5;
  int64_t batch_size = 64, hidden = 256;
  double lr = 0.1, momentum = 0.9;
  uint64_t seed = 0;
  app.add_option("--data-dir", data_dir, "folder with the four IDX .gz files");
  app.add_option("--device", device_name, "cpu or cuda");
  app.add_option("--epochs", epochs);
  app.add_option("--batch-size", batch_size);
  app.add_option("--hidden", hidden);
  app.add_option("--lr", lr);
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  try {
    Device device(device_name);
    manual_seed(seed);
    Split train = load(data_dir, "train"), test = load(data_dir, "t10k");
    train.images = train.images.to(device);
    train.labels = train.labels.to(device);
    test.images = test.images.to(device);
    test.labels = test.labels.to(device);

    Tensor w1 = init_weight(hidden, 784).to(device).detach().requires_grad_();
    Tensor b1 = zeros({hidden}, TensorOptions().device(device).requires_grad());
    Tensor w2 = init_weight(10, hidden).to(device).detach().requires_grad_();
    Tensor b2 = zeros({10}, TensorOptions().device(device).requires_grad());
    std::vector<Tensor> params = {w1, b1, w2, b2}, velocity;
    for (auto& p : params) velocity.push_back(zeros_like(p));
    auto forward = [&](const Tensor& x) { return linear(relu(linear(x, w1, b1)), w2, b2); };

    int64_t n = train.images.size(0);
    auto start = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      // A random permutation: random keys sorted on the host.
      std::vector<int64_t> perm(n);
      {
        auto keys = rand({n}).to_vector<float>();
        for (int64_t i = 0; i < n; ++i) perm[i] = i;
        std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
      }
      Tensor perm_t = from_vector(perm).to(device);
      double loss_sum = 0;
      int64_t batches = 0;
      for (int64_t s = 0; s + batch_size <= n; s += batch_size) {
        Tensor idx = perm_t.narrow(0, s, batch_size);
        Tensor loss = cross_entropy(forward(index_select(train.images, 0, idx)), index_select(train.labels, 0, idx));
        for (auto& p : params) p.set_grad({});
        loss.backward();
        {
          NoGradGuard no_grad;
          for (size_t i = 0; i < params.size(); ++i) {
            velocity[i].mul_(momentum).add_(params[i].grad());
            params[i].sub_(velocity[i] * lr);
          }
        }
        loss_sum += loss.item<double>();
        ++batches;
      }
      NoGradGuard no_grad;
      double acc = eq(argmax(forward(test.images), 1), test.labels).to(kFloat32).mean().item<double>();
      std::printf("epoch %d  train loss %.4f  test accuracy %.4f\n", epoch, loss_sum / batches, acc);
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    NoGradGuard no_grad;
    double acc = eq(argmax(forward(test.images), 1), test.labels).to(kFloat32).mean().item<double>();
    std::printf("{\"sample\": \"fashion_mnist\", \"model\": \"mlp\", \"device\": \"%s\", \"epochs\": %d, "
                "\"test_accuracy\": %.4f, \"samples_per_sec\": %.1f}\n",
                device.str().c_str(), epochs, acc, n * epochs / seconds);
    return 0;
  } catch (const Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
