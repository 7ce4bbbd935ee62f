#pragma once
// Everything a training program needs from distributed/: joining a job,
// the default group and collectives, stores, process groups, subgroups and
// device meshes, and the parallelism built on them (DDP, DataParallel,
// ZeRO-1, ring all-reduce, layer split, pipelines, parameter servers).
#include "distributed/collectives.h"
#include "distributed/comm_hooks/comm_hook.h"
#include "distributed/comm_hooks/compress_hooks.h"
#include "distributed/comm_hooks/counting_process_group.h"
#include "distributed/comm_hooks/powersgd.h"
#include "distributed/data_parallel.h"
#include "distributed/ddp.h"
#include "distributed/device_mesh.h"
#include "distributed/file_store.h"
#include "distributed/fsdp.h"
#include "distributed/gloo_process_group.h"
#include "distributed/init.h"
#include "distributed/model_parallel.h"
#include "distributed/parameter_server/parameter_server.h"
#include "distributed/pipeline/executor.h"
#include "distributed/pipeline/schedule.h"
#include "distributed/pipeline/stage.h"
#include "distributed/process_group.h"
#include "distributed/process_group_factory.h"
#include "distributed/ring_all_reduce.h"
#include "distributed/store.h"
#include "distributed/subgroup.h"
#include "distributed/tcp_store.h"
#include "distributed/zero.h"
