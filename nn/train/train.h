#pragma once
/// @file
/// Everything in anvil::nn::train: Trainer, tasks, callbacks, mixed precision,
/// monitor, profiler, batch-size finder, logs and plots.
#include "nn/train/amp.h"
#include "nn/train/batch_size_finder.h"
#include "nn/train/callbacks.h"
#include "nn/train/gpu_sampler.h"
#include "nn/train/lr_callbacks.h"
#include "nn/train/metrics_log.h"
#include "nn/train/model_checkpoint.h"
#include "nn/train/monitor.h"
#include "nn/train/plot.h"
#include "nn/train/profiler.h"
#include "nn/train/progress.h"
#include "nn/train/tensorboard.h"
#include "nn/train/task.h"
#include "nn/train/trainer.h"
