// Layer-split model parallelism: an MLP cut into consecutive parts, each on
// its own device (every GPU when there are some; otherwise several "cpu"
// parts, which shows the mechanism: the activation hops between parts in
// forward and the gradient hops back in backward). Trains a few epochs on
// generated data (Gaussian clusters, one per class) and reports the held-out
// accuracy; the last line is JSON.
//
//   build/bin/model_parallel --epochs 3
//   build/bin/model_parallel --devices cpu,cuda:0     # any explicit list
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <anvil/anvil.h>

#include "distributed/model_parallel/model_parallel.h"

using namespace anvil;
using namespace anvil::nn;

namespace {

struct Data {
  Tensor x, y;  // [n, features] float32, [n] int64
};

// n points around `centers` [classes, features]: x = centers[y] + noise.
Data make_clusters(const Tensor& centers, int64_t n, double noise) {
  Tensor y = randint(0, centers.size(0), {n});
  Tensor x = index_select(centers, 0, y) + randn({n, centers.size(1)}) * noise;
  return {x, y};
}

std::vector<Device> pick_devices(const std::string& list, int cpu_parts) {
  std::vector<Device> devices;
  if (!list.empty()) {
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) devices.emplace_back(item);
  } else if (cuda::is_available()) {
    for (int i = 0; i < cuda::device_count(); ++i) devices.push_back(Device::cuda(i));
  } else {
    devices.assign(static_cast<size_t>(cpu_parts), Device::cpu());
  }
  return devices;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Layer-split model parallelism with anvil"};
  std::string device_list;
  int cpu_parts = 3;
  int64_t epochs = 3, batch_size = 64, train_size = 8192, features = 32, classes = 10;
  double lr = 1e-3, noise = 2.0;
  uint64_t seed = 0;
  app.add_option("--devices", device_list,
                 "comma-separated devices, one per part (default: every GPU, else cpu parts)");
  app.add_option("--cpu-parts", cpu_parts, "parts when no GPU is present");
  app.add_option("--epochs", epochs);
  app.add_option("--batch-size", batch_size);
  app.add_option("--train-size", train_size);
  app.add_option("--lr", lr);
  app.add_option("--noise", noise, "spread of each class's points around its centre (overlap makes it harder)");
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  try {
    manual_seed(seed);
    Tensor centers = randn({classes, features});
    Data train = make_clusters(centers, train_size, noise);
    Data test = make_clusters(centers, 2048, noise);

    auto seq = std::make_shared<Sequential>(std::make_shared<Linear>(features, 256), std::make_shared<ReLU>(),
                                            std::make_shared<Linear>(256, 256), std::make_shared<ReLU>(),
                                            std::make_shared<Linear>(256, 128), std::make_shared<ReLU>(),
                                            std::make_shared<Linear>(128, classes));
    std::vector<Device> devices = pick_devices(device_list, cpu_parts);
    auto model = distributed::split_across_devices(seq, devices);  // balanced by parameter count
    std::printf("%s", model->placement().c_str());
    // One optimizer over every part: each parameter is updated on its own device.
    optim::Adam optimizer(model->parameters(), {.lr = lr});
    const Device out_device = model->output_device();

    auto start = std::chrono::steady_clock::now();
    const int64_t batches = train_size / batch_size;
    double loss_value = 0;
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      model->train();
      double sum = 0;
      for (int64_t b = 0; b < batches; ++b) {
        Tensor x = train.x.narrow(0, b * batch_size, batch_size);
        Tensor y = train.y.narrow(0, b * batch_size, batch_size).to(out_device);
        optimizer.zero_grad();
        Tensor loss = cross_entropy(model->forward(x), y);  // logits live on the last part's device
        loss.backward();  // gradients cross back over every device hop
        optimizer.step();
        sum += loss.item<double>();
      }
      loss_value = sum / static_cast<double>(batches);
      std::printf("epoch %lld: train loss %.4f\n", static_cast<long long>(epoch + 1), loss_value);
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    model->eval();
    NoGradGuard no_grad;
    Tensor predicted = argmax(model->forward(test.x), 1).cpu();
    double accuracy = eq(predicted, test.y).to(kFloat64).mean().item<double>();
    std::printf("test accuracy %.4f\n", accuracy);
    std::string device_names;
    for (size_t i = 0; i < devices.size(); ++i) device_names += (i ? ", \"" : "\"") + devices[i].str() + "\"";
    std::printf(
        "{\"sample\": \"model_parallel\", \"parts\": %zu, \"devices\": [%s], \"epochs\": %lld, "
        "\"train_loss\": %.4f, \"test_accuracy\": %.4f, \"samples_per_sec\": %.1f}\n",
        devices.size(), device_names.c_str(), static_cast<long long>(epochs), loss_value, accuracy,
        static_cast<double>(epochs * batches * batch_size) / seconds);
    return 0;
  } catch (const Error& e) {
    std::cerr << "model_parallel: " << e.what() << "\n";
    return 1;
  }
}
