#pragma once
// Everything a training program needs from distributed/: joining a job,
// the default group and collectives, stores, and process groups.
#include "distributed/collectives.h"
#include "distributed/file_store.h"
#include "distributed/gloo_process_group.h"
#include "distributed/init.h"
#include "distributed/process_group.h"
#include "distributed/process_group_factory.h"
#include "distributed/store.h"
#include "distributed/tcp_store.h"
