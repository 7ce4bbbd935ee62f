#pragma once
/// @file
/// Batch transforms for image data [N, C, H, W] on the CPU, applied by the
/// DataLoader's workers. Random ones draw per sample from Philox with the
/// batch seed the loader passes, so a seeded run is reproducible.
#include <vector>

#include "nn/data/dataloader.h"

namespace anvil::nn::data::transforms {

/// (x - mean[c]) / std[c] per channel.
BatchTransform normalize(std::vector<double> mean, std::vector<double> std);
/// Pads each image by `padding` zeros on every side, then crops a random
/// size x size window (the CIFAR/Fashion-MNIST augmentation).
BatchTransform random_crop(int64_t size, int64_t padding);
/// Mirrors each image left-right with probability p.
BatchTransform random_horizontal_flip(double p = 0.5);
/// Applies transforms in order.
BatchTransform compose(std::vector<BatchTransform> transforms);

}  // namespace anvil::nn::data::transforms
