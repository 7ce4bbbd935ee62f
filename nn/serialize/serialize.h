#pragma once
/// @file
/// nn/serialize: state dicts as safetensors files, training checkpoints, and
/// the atomic file replacement both use.
#include "nn/serialize/atomic_file.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
