#pragma once
/// @file
/// The parameter-server strategy (README.md in this folder).
#include "distributed/parameter_server/client.h"
#include "distributed/parameter_server/job.h"
#include "distributed/parameter_server/server.h"
#include "distributed/parameter_server/shard_plan.h"
