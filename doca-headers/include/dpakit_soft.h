/*
 * dpakit soft device: controls that only the soft device has.
 *
 * Everything else a program uses is DOCA's own API. These functions choose how the soft device
 * runs DPA kernels, read what it recorded, and describe DPA apps for it. Each setting can also
 * come from the environment, so an unmodified DOCA program can choose it:
 *
 *   DPAKIT_SOFT_SCHED=busy|sleep|det:SEED   how DPA activations run (default busy)
 *   DPAKIT_SOFT_WORKERS=N                   worker threads per DPA context (default: cores - 1)
 *   DPAKIT_SOFT_PIN=CPU[,CPU...]            pin worker i to the i-th CPU of the list
 *   DPAKIT_SOFT_SIDE=host|arm               list only this side's devices (default both)
 *   DPAKIT_SOFT_EXEC=native|isa             how kernels run (default native)
 *   DPAKIT_SOFT_DPA_IMAGE=PATH              the DPA image ISA mode runs (default: the app's)
 *   DPAKIT_SOFT_ISA_BUDGET=N                instructions one ISA activation may retire
 *   DPAKIT_SOFT_LOG=0|1                     print each failed call's diagnostic to stderr
 *   DPAKIT_DPA_LOG_LEVEL=N                  most verbose doca_dpa_dev_log level printed (50)
 */
#ifndef DPAKIT_SOFT_H
#define DPAKIT_SOFT_H

#include <stddef.h>
#include <stdint.h>
#include <doca_error.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_dpa;

/* ---- Scheduling of DPA activations (per DPA context, before doca_dpa_start) ---- */

enum dpakit_soft_sched_mode {
	/* Workers spin on their threads' completion contexts: lowest latency, a core each. */
	DPAKIT_SOFT_SCHED_BUSY_POLL = 0,
	/* Workers sleep until a notification wakes them. */
	DPAKIT_SOFT_SCHED_SLEEP = 1,
	/* No workers: progress runs one ready activation at a time, chosen by a seeded generator. */
	DPAKIT_SOFT_SCHED_DETERMINISTIC = 2,
};

/* `seed` matters in deterministic mode only. */
doca_error_t dpakit_soft_dpa_set_sched_mode(struct doca_dpa *dpa, enum dpakit_soft_sched_mode mode,
					    uint64_t seed);

/* Worker threads of the context (at least 1). */
doca_error_t dpakit_soft_dpa_set_num_workers(struct doca_dpa *dpa, uint32_t num_workers);

/* Pins worker i to cpus[i % num_cpus]; every CPU must exist. */
doca_error_t dpakit_soft_dpa_set_worker_cpus(struct doca_dpa *dpa, const uint32_t *cpus,
					     uint32_t num_cpus);

/* Deterministic mode: runs one ready activation; *ran is 1 if one ran. */
doca_error_t dpakit_soft_dpa_step(struct doca_dpa *dpa, uint8_t *ran);

/* ---- How kernels run (per DPA context, before doca_dpa_start) ---- */

enum dpakit_soft_exec_mode {
	/* The kernels compiled for the host run as host code: fastest. */
	DPAKIT_SOFT_EXEC_NATIVE = 0,
	/*
	 * The app's DPA image (the riscv64 executable `cargo xtask build-dpa` links) runs in the
	 * soft device's RV64IMAC interpreter: every load and store is checked, each activation has
	 * an instruction budget, and instructions and device calls are counted.
	 */
	DPAKIT_SOFT_EXEC_ISA = 1,
};

doca_error_t dpakit_soft_dpa_set_exec_mode(struct doca_dpa *dpa, enum dpakit_soft_exec_mode mode);

/* ISA mode: the image to run instead of DPAKIT_SOFT_DPA_IMAGE or the one the app names. */
doca_error_t dpakit_soft_dpa_set_isa_image(struct doca_dpa *dpa, const char *path);

/* ISA mode: instructions one activation may retire before it is a fatal runaway (default 1e8). */
doca_error_t dpakit_soft_dpa_set_isa_budget(struct doca_dpa *dpa, uint64_t max_instructions);

/* What the interpreter counted for one DPA thread. */
struct dpakit_soft_isa_profile {
	uint64_t activations;      /* activations run */
	uint64_t instructions;     /* instructions they retired; device calls not included */
	uint64_t max_instructions; /* the most one activation retired */
	uint64_t device_calls;     /* DOCA device function calls, all functions together */
};

struct doca_dpa_thread;

/* DOCA_ERROR_NOT_SUPPORTED when the thread's context runs natively. */
doca_error_t dpakit_soft_dpa_thread_get_isa_profile(struct doca_dpa_thread *thread,
						    struct dpakit_soft_isa_profile *profile);

/*
 * Device calls by function: counts[i] is the count of dpakit_soft_device_function_name(i), for
 * up to `capacity` functions; *num_functions gets how many there are.
 */
doca_error_t dpakit_soft_dpa_thread_get_isa_calls(struct doca_dpa_thread *thread, uint64_t *counts,
						  size_t capacity, size_t *num_functions);

/* The C name of DOCA device function `index`, or NULL past the last. */
const char *dpakit_soft_device_function_name(size_t index);

/* ---- What the soft device recorded ---- */

/* How an activation ended. */
enum dpakit_soft_ending {
	DPAKIT_SOFT_ENDING_RESCHEDULE = 0,
	DPAKIT_SOFT_ENDING_RETURN = 1,
	DPAKIT_SOFT_ENDING_FINISH = 2,
	DPAKIT_SOFT_ENDING_FAULT = 3,
};

/* One activation in deterministic mode. */
struct dpakit_soft_trace_event {
	uint32_t thread;     /* index of the DPA thread */
	uint32_t ending;     /* enum dpakit_soft_ending */
	uint64_t activation; /* the thread's activation number, from 1 */
};

/*
 * Copies up to `capacity` events of the deterministic trace; *num_events gets the total, which
 * may exceed `capacity` (call again with room for all).
 */
doca_error_t dpakit_soft_dpa_get_trace(struct doca_dpa *dpa, struct dpakit_soft_trace_event *events,
				       size_t capacity, size_t *num_events);

struct dpakit_soft_dpa_stats {
	uint64_t activations; /* activations run */
	uint32_t workers;     /* worker threads */
	uint32_t reserved;
};

doca_error_t dpakit_soft_dpa_get_stats(struct doca_dpa *dpa, struct dpakit_soft_dpa_stats *stats);

/*
 * Completion contexts (consumer completions and DPA completions) one DPA thread of `dpa` may
 * have attached at once; attaching one more fails with DOCA_ERROR_NO_MEMORY. The same in every
 * scheduling mode.
 */
doca_error_t dpakit_soft_dpa_get_max_completions_per_thread(struct doca_dpa *dpa,
							    uint32_t *max_completions);

/*
 * The fatal error of a DPA context (a kernel fault, device-side misuse): its code is returned
 * (DOCA_SUCCESS while healthy) and its explanation written to `message` (NUL-terminated,
 * truncated to `size` bytes; `message` may be NULL).
 */
doca_error_t dpakit_soft_dpa_get_error(struct doca_dpa *dpa, char *message, size_t size);

/*
 * What a started DPA thread is doing, for a diagnostic: its kernel, and how long its current
 * activation has run (or that it is idle, finished, faulted). NUL-terminated, truncated to
 * `size` bytes.
 */
doca_error_t dpakit_soft_dpa_thread_describe(const struct doca_dpa_thread *dpa_thread, char *text,
					     size_t size);

/*
 * Every kernel of the process, in any DPA context, whose current activation has run for
 * `min_usec` microseconds or more: one line each, naming the kernel, its thread and context and
 * how long ("" when none). What a program that waited too long may be waiting for.
 */
doca_error_t dpakit_soft_describe_long_activations(uint64_t min_usec, char *text, size_t size);

/*
 * The explanation of the calling thread's last failed DOCA call, NUL-terminated and truncated
 * to `size` bytes. Returns that call's code (DOCA_SUCCESS if none failed yet).
 */
doca_error_t dpakit_soft_last_error(char *message, size_t size);

/* Pins the calling thread to `cpu` (benchmarks keep host and DPA workers on distinct cores). */
doca_error_t dpakit_soft_pin_current_thread(uint32_t cpu);

/*
 * The first DPA context started in ISA mode from now on waits for gdb at `address` ("HOST:PORT",
 * as DPAKIT_SOFT_GDB, which it overrides; NULL goes back to the environment) and starts when gdb
 * continues. DOCA_ERROR_INVALID_VALUE for an address that cannot be listened on,
 * DOCA_ERROR_BAD_STATE once a context is debugged.
 */
doca_error_t dpakit_soft_set_gdb(const char *address);

/* ---- DPA apps ---- */

/*
 * On the soft device, `struct doca_dpa_app *` points at this descriptor: the app's name and its
 * kernels, compiled for the host. `cargo xtask build-dpa` and dpakit_dev::dpa_app! make it for
 * Rust kernels; DPAKIT_SOFT_APP makes it for C kernels.
 */
#define DPAKIT_SOFT_APP_MAGIC 0x6470616b69746170ULL /* "dpakitap" */
#define DPAKIT_SOFT_APP_VERSION 4u
#define DPAKIT_SOFT_KERNEL_THREAD 0u
#define DPAKIT_SOFT_KERNEL_RPC 1u

struct dpakit_soft_kernel {
	const char *name;
	const void *entry; /* void f(uint64_t) for a thread, uint64_t f(uint64_t...) for an RPC */
	uint32_t kind;     /* DPAKIT_SOFT_KERNEL_THREAD or DPAKIT_SOFT_KERNEL_RPC */
	/* Parameters: 1 for a kernel doca_dpa_threads run, up to 16 for a launched kernel (0 to 16
	 * for one dpacc scanned), up to 4 for an RPC. */
	uint16_t num_args;
	uint16_t narrow_args; /* bit i: parameter i is a 32-bit integer (0: all 64-bit) */
};

struct doca_dpa_app {
	uint64_t magic;       /* DPAKIT_SOFT_APP_MAGIC */
	uint32_t version;     /* DPAKIT_SOFT_APP_VERSION */
	uint32_t num_kernels;
	const char *name;
	const struct dpakit_soft_kernel *kernels;
	const char *image; /* path of the app's DPA image for ISA mode, or NULL (version 2 on) */
	/* Id of the kernel sources built (version 3 on): ISA mode refuses an image whose build id
	 * differs. 0: none, nothing checked. */
	uint64_t build_id;
	/* The DPA image itself, embedded in the program (version 4 on): ISA mode runs it before it
	 * looks at `image`. NULL and 0: none embedded. */
	const void *image_data;
	uint64_t image_size;
};

#define DPAKIT_SOFT_THREAD_KERNEL(fn) {#fn, (const void *)(fn), DPAKIT_SOFT_KERNEL_THREAD, 1u}
#define DPAKIT_SOFT_RPC_KERNEL(fn, nargs) {#fn, (const void *)(fn), DPAKIT_SOFT_KERNEL_RPC, (nargs)}

/* Defines `struct doca_dpa_app *app` listing the given DPAKIT_SOFT_*_KERNEL entries. */
#define DPAKIT_SOFT_APP(app, ...)                                                                  \
	static const struct dpakit_soft_kernel app##_dpakit_kernels[] = {__VA_ARGS__};             \
	static const struct doca_dpa_app app##_dpakit_descriptor = {                               \
		DPAKIT_SOFT_APP_MAGIC, DPAKIT_SOFT_APP_VERSION,                                    \
		(uint32_t)(sizeof(app##_dpakit_kernels) / sizeof(app##_dpakit_kernels[0])), #app,  \
		app##_dpakit_kernels, NULL, 0, NULL, 0};                                           \
	struct doca_dpa_app *app = (struct doca_dpa_app *)&app##_dpakit_descriptor

#ifdef __cplusplus
}
#endif

#endif /* DPAKIT_SOFT_H */
