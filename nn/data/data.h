#pragma once
/// @file
/// Everything in nn/data.
#include "nn/data/dataloader.h"
#include "nn/data/dataset.h"
#include "nn/data/idx.h"
#include "nn/data/sampler.h"
#include "nn/data/transforms.h"
