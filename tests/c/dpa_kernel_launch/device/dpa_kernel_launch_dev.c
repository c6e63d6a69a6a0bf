/*
 * The kernel-launch program's DPA code, written as DOCA 3.x samples write theirs: a kernel with
 * no parameter that logs, and one launched on several threads with arguments of both widths,
 * which stamps its slot of a DPA-memory table and times itself with dpaintrin.h's counters.
 */
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_sync_event.h>
#include <dpaintrin.h>

#include "../kernel_launch_common.h"

__dpa_global__ void hello_world(void)
{
	DOCA_DPA_DEV_LOG_INFO("Hello from DPA thread %u of %u\n", doca_dpa_dev_thread_rank(),
			      doca_dpa_dev_num_threads());
}

__dpa_global__ void stamp(uint64_t table, uint32_t base, doca_dpa_dev_sync_event_t marks, uint64_t magic)
{
	struct slot *slots = (struct slot *)table;
	const unsigned int rank = doca_dpa_dev_thread_rank();
	const uint64_t start = __dpa_thread_cycles();
	struct slot mine = {
		.value = base + rank,
		.magic = magic,
		.threads = doca_dpa_dev_num_threads(),
		.elapsed_ok = 0,
	};

	__dpa_compiler_barrier();
	mine.elapsed_ok = __dpa_thread_cycles() >= start && __dpa_thread_time() > 0;
	slots[rank] = mine; /* a structure copy: the compiler may call memcpy */
	__dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W);
	doca_dpa_dev_sync_event_update_add(marks, 1);
}
