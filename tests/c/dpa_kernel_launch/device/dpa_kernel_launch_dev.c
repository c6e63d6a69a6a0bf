/*
 * The kernel-launch program's DPA code, written as DOCA 3.x samples write theirs: a kernel with
 * no parameter that logs, and one launched on several threads with arguments of both widths,
 * which stamps its slot of a DPA-memory table and times itself with dpaintrin.h's counters, and
 * one that moves bytes with memset, memcpy and memmove (what DPA toolchains provide).
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

/* Fills `len` bytes at `buf` with `byte`, copies them `len` further on, then moves the whole
 * 2 * len bytes one byte up (overlapping): the sizes are the host's, so each is a call. */
__dpa_global__ void shuffle(uint64_t buf, uint32_t len, uint32_t byte)
{
	uint8_t *p = (uint8_t *)buf;

	__builtin_memset(p, (int)byte, len);
	__builtin_memcpy(p + len, p, len);
	p[0] = 1;
	__builtin_memmove(p + 1, p, 2 * (uint64_t)len);
}
