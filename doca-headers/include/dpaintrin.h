/*
 * dpakit soft device: the DPA intrinsics kernels use.
 *
 * The counters read the soft device's clocks: cycles of a nominal 1 GHz clock and the timer in
 * microseconds come from the DPA timer's clock (DOCA_CLOCK_NIC_DPA_TIMER on the host side);
 * instructions retired are counted in ISA mode (natively, where nothing counts them, the cycle
 * count stands in). Like the device's, each counter starts from an arbitrary origin: only a
 * difference of two reads means something. Fences order this thread's accesses for every other
 * observer, as a full fence of the host does; the space and operation arguments name what the
 * device would order and are ignored.
 */
#ifndef DPAINTRIN_H
#define DPAINTRIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The intrinsics interface version a kernel asks for (this header provides 1.3). */
#define DPA_INTRIN_VERSION(major, minor) ((major) * 100 + (minor))
#ifndef DPA_INTRIN_VERSION_USED
#define DPA_INTRIN_VERSION_USED DPA_INTRIN_VERSION(1, 3)
#endif

/* Memory spaces a fence orders. */
#define __DPA_HEAP 1
#define __DPA_MEMORY 2
#define __DPA_MMIO 4
#define __DPA_SYSTEM 8

/* Accesses a fence orders. */
#define __DPA_R 1
#define __DPA_W 2
#define __DPA_RW 3

/* The soft device's counters (device functions, served natively and in ISA mode). */
uint64_t dpakit_soft_thread_cycles(void);
uint64_t dpakit_soft_thread_inst_ret(void);
uint64_t dpakit_soft_thread_time(void);

#define __dpa_thread_cycles() dpakit_soft_thread_cycles()
#define __dpa_thread_inst_ret() dpakit_soft_thread_inst_ret()
#define __dpa_thread_time() dpakit_soft_thread_time()

/* A full fence; the arguments (constants naming spaces and accesses) are ignored. */
#define __dpakit_dpa_fence(...) __atomic_thread_fence(__ATOMIC_SEQ_CST)

#define __dpa_thread_fence(space, pred, succ) __dpakit_dpa_fence(space, pred, succ)
#define __dpa_thread_memory_fence(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_outbox_fence(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_window_fence(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_system_fence(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_window_read_inv(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_window_writeback(...) __dpakit_dpa_fence(__VA_ARGS__)
#define __dpa_thread_memory_writeback(...) __dpakit_dpa_fence(__VA_ARGS__)

/* dpacc's builtin (the soft dpacc defines it on its command lines too): a barrier to the
 * compiler only. */
#ifndef __dpa_compiler_barrier
#define __dpa_compiler_barrier() __asm__ __volatile__("" ::: "memory")
#endif

#ifdef __cplusplus
}
#endif

#endif /* DPAINTRIN_H */
