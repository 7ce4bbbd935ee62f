#pragma once
/// @file
/// Everything a training program needs from distributed/: joining a job,
/// the default group and collectives, stores, process groups, subgroups and
/// device meshes (store/, process_group/), and the parallelism built on them
/// (ddp/ with comm_hooks/, zero/, fsdp/, model_parallel/, pipeline/,
/// parameter_server/; tensor_parallel/'s headers are included on their own).
#include "distributed/comm_hooks/comm_hook.h"
#include "distributed/comm_hooks/compress_hooks.h"
#include "distributed/comm_hooks/counting_process_group.h"
#include "distributed/comm_hooks/powersgd.h"
#include "distributed/ddp/data_parallel.h"
#include "distributed/ddp/ddp.h"
#include "distributed/fsdp/fsdp.h"
#include "distributed/model_parallel/model_parallel.h"
#include "distributed/parameter_server/parameter_server.h"
#include "distributed/pipeline/executor.h"
#include "distributed/pipeline/schedule.h"
#include "distributed/pipeline/stage.h"
#include "distributed/process_group/collectives.h"
#include "distributed/process_group/device_mesh.h"
#include "distributed/process_group/gloo/gloo_process_group.h"
#include "distributed/process_group/init.h"
#include "distributed/process_group/process_group.h"
#include "distributed/process_group/process_group_factory.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "distributed/process_group/subgroup.h"
#include "distributed/store/file_store.h"
#include "distributed/store/store.h"
#include "distributed/store/tcp_store.h"
#include "distributed/zero/zero.h"
