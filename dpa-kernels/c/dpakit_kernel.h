/*
 * dpakit: declaring C kernels so `cargo xtask build-dpa` finds them.
 *
 *   DPAKIT_THREAD_KERNEL(my_kernel);
 *   __dpa_global__ void my_kernel(uint64_t arg) { ... }
 *
 *   DPAKIT_RPC_KERNEL(my_rpc, 2);
 *   __dpa_rpc__ uint64_t my_rpc(uint64_t a, uint64_t b) { ... }
 *
 * Each marker declares the kernel's prototype (so the definition must match it) and, on device
 * builds (riscv64 without an OS), records `thread:NAME:c` or `rpc:NAME:c` in the
 * `.dpakit.kernels` section, where the Rust macros record `thread:NAME` and `rpc:NAME`. build-dpa
 * reads those records to list the kernels, their language and their code size. Host builds
 * record nothing: the soft device knows kernels through the app descriptor.
 *
 * Rust names a C kernel with dpakit_dev::extern_thread_kernel!, and the app lists it like any
 * other kernel.
 */
#ifndef DPAKIT_KERNEL_H
#define DPAKIT_KERNEL_H

#include <stdint.h>
#include <doca_dpa_dev.h>

#if defined(__riscv) && !defined(__linux__)
#define DPAKIT_DEVICE_BUILD 1
#endif

#ifdef DPAKIT_DEVICE_BUILD
/* A NUL-terminated `kind:name:c` in the records section, kept although nothing refers to it. */
#define DPAKIT_KERNEL_RECORD_(kind, name)                                                          \
	__attribute__((used, section(".dpakit.kernels"))) static const char                        \
		dpakit_kernel_record_##name[] = #kind ":" #name ":c";
#else
#define DPAKIT_KERNEL_RECORD_(kind, name)
#endif

/* The parameter list of an RPC kernel taking `nargs` (0 to 4) uint64_t arguments. */
#define DPAKIT_RPC_PARAMS_0 void
#define DPAKIT_RPC_PARAMS_1 uint64_t
#define DPAKIT_RPC_PARAMS_2 uint64_t, uint64_t
#define DPAKIT_RPC_PARAMS_3 uint64_t, uint64_t, uint64_t
#define DPAKIT_RPC_PARAMS_4 uint64_t, uint64_t, uint64_t, uint64_t
#define DPAKIT_RPC_PARAMS_(nargs) DPAKIT_RPC_PARAMS_##nargs

/* A thread kernel: `void name(uint64_t arg)`, run by DPA threads. */
#define DPAKIT_THREAD_KERNEL(name)                                                                 \
	DPAKIT_KERNEL_RECORD_(thread, name)                                                        \
	__dpa_global__ void name(uint64_t arg)

/* An RPC kernel: `uint64_t name(uint64_t...)` with `nargs` arguments, run once by doca_dpa_rpc. */
#define DPAKIT_RPC_KERNEL(name, nargs)                                                             \
	DPAKIT_KERNEL_RECORD_(rpc, name)                                                           \
	__dpa_rpc__ uint64_t name(DPAKIT_RPC_PARAMS_(nargs))

#endif /* DPAKIT_KERNEL_H */
