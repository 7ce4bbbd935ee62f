#pragma once
/// @file
/// IDX files (the MNIST format), plain or gzip-compressed: a magic number
/// giving the element type and rank, the dims as big-endian int32, then data.
#include <string>

#include "core/tensor.h"

namespace anvil::nn::data {

/// Reads an IDX file (".gz" or not) into a CPU tensor of its own element type
/// (uint8 for images and labels). Missing, truncated or malformed files raise
/// anvil::Error naming the file and what was wrong.
Tensor read_idx(const std::string& path);

}  // namespace anvil::nn::data
