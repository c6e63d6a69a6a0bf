/* What the kernel-launch program's host and DPA halves share. */
#ifndef KERNEL_LAUNCH_COMMON_H
#define KERNEL_LAUNCH_COMMON_H

#include <stdint.h>

/* One thread's stamp in the DPA-memory table. */
struct slot {
	uint64_t value;	    /* base + rank */
	uint64_t magic;	    /* the launch's magic number */
	uint64_t threads;   /* doca_dpa_dev_num_threads() */
	uint64_t elapsed_ok; /* the counters moved forward */
};

#define STAMP_THREADS 8u
#define STAMP_BASE 1000u
#define STAMP_MAGIC 0x5eedfaceULL

#endif /* KERNEL_LAUNCH_COMMON_H */
