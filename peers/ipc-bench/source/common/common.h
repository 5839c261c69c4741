#ifndef IPC_BENCH_COMMON_H
#define IPC_BENCH_COMMON_H

#include "common/arguments.h"
#include "common/benchmarks.h"
#include "common/signals.h"
#include "common/utility.h"

#endif /* IPC_BENCH_COMMON_H */
