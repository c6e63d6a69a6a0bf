/*
 * dpakit soft device: the DPA, host side.
 *
 * A DPA context runs one app (the kernels dpacc built, or on the soft device the app library
 * `cargo xtask build-dpa` built). Threads run thread kernels when a completion context attached
 * to them gets work; RPCs run a kernel once and return its value; device memory is allocated
 * and copied from the host.
 */
#ifndef DOCA_DPA_H
#define DOCA_DPA_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_dev;
struct doca_devinfo;
struct doca_dpa;
struct doca_dpa_app;
struct doca_dpa_thread;
struct doca_dpa_completion;
struct doca_dpa_notification_completion;
struct doca_dpa_eu_affinity;
struct doca_sync_event;

/* A kernel as host code names it: pass its address (a doca_dpa_func_t *). */
typedef void(doca_dpa_func_t)(void);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_cap_is_supported(const struct doca_devinfo *devinfo);

/* The DPA context. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_create(struct doca_dev *dev, struct doca_dpa **dpa);

/* Fails with IN_USE while objects created on the context still exist. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_destroy(struct doca_dpa *dpa);

/* The app whose kernels the context runs; before start. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_set_app(struct doca_dpa *dpa, struct doca_dpa_app *app);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_start(struct doca_dpa *dpa);

/* Fails with IN_USE while objects created on the context still exist. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_stop(struct doca_dpa *dpa);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_get_dpa_handle(struct doca_dpa *dpa, doca_dpa_dev_t *handle);

/*
 * Whether the context has failed (a kernel faulted, panicked, misused the device or never ended
 * its activation), without clearing it: SUCCESS if not, BAD_STATE if so. A failed context is
 * fatal: destroy it. On the soft device dpakit_soft_last_error then says what failed.
 */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_peek_at_last_error(const struct doca_dpa *dpa);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_get_total_num_eus_available(struct doca_dpa *dpa, unsigned int *total_num_eus);

/* The level from which doca_dpa_dev_log messages of this context's kernels are printed. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_set_log_level(struct doca_dpa *dpa, doca_dpa_dev_log_level_t log_level);

/*
 * A context for another device sharing this context's DPA process (an SF or VF of the same
 * card). The soft device does not model it: DOCA_ERROR_NOT_SUPPORTED.
 */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_device_extend(struct doca_dpa *dpa, struct doca_dev *other_dev,
				    struct doca_dpa **extended_dpa);

/*
 * Runs the RPC kernel `func` once with the variadic arguments (each of uint64_t size, as many
 * as the kernel takes) and stores its return value in *retval.
 */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_rpc(struct doca_dpa *dpa, doca_dpa_func_t *func, uint64_t *retval, ...);

/*
 * Kernel launches: runs thread kernel `func` once on `num_threads` threads, with the variadic
 * arguments (as many as the kernel takes, each as its parameter's type), once `wait_event`
 * reaches `wait_threshold` (0 to 254); when every thread has returned, `comp_event` is set to
 * `comp_count` (_update_set) or increased by it (_update_add). Either event may be NULL. The
 * call returns at once; launches on one context start in the order they were made.
 */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_kernel_launch_update_set(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
					       uint64_t wait_threshold, struct doca_sync_event *comp_event,
					       uint64_t comp_count, unsigned int num_threads,
					       doca_dpa_func_t *func, ...);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_kernel_launch_update_add(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
					       uint64_t wait_threshold, struct doca_sync_event *comp_event,
					       uint64_t comp_count, unsigned int num_threads,
					       doca_dpa_func_t *func, ...);

/* The most threads one launch runs on. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_get_max_threads_per_kernel(const struct doca_dpa *dpa, unsigned int *value);

/* How long, in seconds, a launched kernel may run before the context fails. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_get_kernel_max_run_time(const struct doca_dpa *dpa, unsigned long long *value);

/* Device memory. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_mem_alloc(struct doca_dpa *dpa, size_t size, doca_dpa_dev_uintptr_t *dev_ptr);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_mem_free(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t dev_ptr);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_h2d_memcpy(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t dst_ptr, void *src_ptr,
				 size_t size);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_d2h_memcpy(struct doca_dpa *dpa, void *dst_ptr, doca_dpa_dev_uintptr_t src_ptr,
				 size_t size);

/* Execution-unit affinity. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_eu_affinity_create(struct doca_dpa *dpa, struct doca_dpa_eu_affinity **affinity);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_eu_affinity_destroy(struct doca_dpa_eu_affinity *affinity);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_eu_affinity_set(struct doca_dpa_eu_affinity *affinity, unsigned int eu_id);

/* Threads: create, set the kernel and its argument, start, then run once set up. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_create(struct doca_dpa *dpa, struct doca_dpa_thread **dpa_thread);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_destroy(struct doca_dpa_thread *dpa_thread);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_set_func_arg(struct doca_dpa_thread *dpa_thread, doca_dpa_func_t *func,
					  uint64_t arg);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_set_local_storage(struct doca_dpa_thread *dpa_thread,
					       doca_dpa_dev_uintptr_t dev_ptr);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_set_affinity(struct doca_dpa_thread *dpa_thread,
					  const struct doca_dpa_eu_affinity *affinity);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_start(struct doca_dpa_thread *dpa_thread);

/* Makes a started thread runnable: completions attached to it trigger it from now on. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_run(struct doca_dpa_thread *dpa_thread);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_thread_stop(struct doca_dpa_thread *dpa_thread);

/* DPA completions: where DPA producers report sends. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_create(struct doca_dpa *dpa, unsigned int queue_size,
					struct doca_dpa_completion **dpa_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_destroy(struct doca_dpa_completion *dpa_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_set_thread(struct doca_dpa_completion *dpa_comp,
					    struct doca_dpa_thread *dpa_thread);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_start(struct doca_dpa_completion *dpa_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_stop(struct doca_dpa_completion *dpa_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_dpa_completion_get_dpa_handle(struct doca_dpa_completion *dpa_comp,
						doca_dpa_dev_completion_t *handle);

/* Notification completions: let kernels trigger a thread with doca_dpa_dev_thread_notify. */
DOCA_EXPERIMENTAL
doca_error_t doca_dpa_notification_completion_create(struct doca_dpa *dpa,
						     struct doca_dpa_thread *dpa_thread,
						     struct doca_dpa_notification_completion **notify_comp);

DOCA_EXPERIMENTAL
doca_error_t
doca_dpa_notification_completion_destroy(struct doca_dpa_notification_completion *notify_comp);

DOCA_EXPERIMENTAL
doca_error_t
doca_dpa_notification_completion_start(struct doca_dpa_notification_completion *notify_comp);

DOCA_EXPERIMENTAL
doca_error_t
doca_dpa_notification_completion_stop(struct doca_dpa_notification_completion *notify_comp);

DOCA_EXPERIMENTAL
doca_error_t
doca_dpa_notification_completion_get_dpa_handle(struct doca_dpa_notification_completion *notify_comp,
						doca_dpa_dev_notification_completion_t *handle);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_H */
