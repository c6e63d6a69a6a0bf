/*
 * dpakit soft device: sync events.
 *
 * A sync event is a 64-bit counter that the CPU and DPA kernels update, read and wait on.
 * Configure where it is published and where it is subscribed from (one location each), start
 * it, then use it; a DPA location needs the handle from doca_sync_event_get_dpa_handle, which
 * kernels pass to the doca_dpa_dev_sync_event_* functions (doca_dpa_dev_sync_event.h).
 *
 * The soft device models the CPU, DPA and remote PCI locations, the synchronous operations, the
 * export to the remote PCI side (the other side's process imports it with
 * doca_sync_event_create_from_export) and the task interface (doca_sync_event_as_ctx). It answers
 * DOCA_ERROR_NOT_SUPPORTED for remote network peers and GPUs (see docs/soft-device.md).
 */
#ifndef DOCA_SYNC_EVENT_H
#define DOCA_SYNC_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;
struct doca_ctx;
struct doca_dev;
struct doca_devinfo;
struct doca_dpa;
struct doca_gpu;
struct doca_task;

struct doca_sync_event;
struct doca_sync_event_remote_net;

/* GPU handles (GPUs are not modelled). */
typedef uint64_t doca_gpu_dev_sync_event_t;
typedef uint64_t doca_gpu_dev_sync_event_remote_net_t;

/* Create and destroy. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_create(struct doca_sync_event **event);

/* Stops the event first if it is started; DPA handles exported from it become invalid. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_destroy(struct doca_sync_event *event);

/* Where the event is published from and subscribed from: one location each, before start. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_publisher_location_cpu(struct doca_sync_event *event,
							 struct doca_dev *dev);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_publisher_location_dpa(struct doca_sync_event *event,
							 struct doca_dpa *dpa);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_publisher_location_gpu(struct doca_sync_event *event,
							 struct doca_gpu *gpu);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_publisher_location_remote_pci(struct doca_sync_event *event);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_publisher_location_remote_net(struct doca_sync_event *event);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_subscriber_location_cpu(struct doca_sync_event *event,
							  struct doca_dev *dev);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_subscriber_location_dpa(struct doca_sync_event *event,
							  struct doca_dpa *dpa);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_subscriber_location_gpu(struct doca_sync_event *event,
							  struct doca_gpu *gpu);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_add_subscriber_location_remote_pci(struct doca_sync_event *event);

/* Keep the counter in 8 bytes of the program's memory (aligned, alive until destroy). */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_set_addr(struct doca_sync_event *event, uint64_t *addr);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_set_doca_buf(struct doca_sync_event *event, struct doca_buf *buf);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_start(struct doca_sync_event *event);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_stop(struct doca_sync_event *event);

/*
 * The event as a DOCA context, for the task interface: configure tasks (task_*_set_conf), connect
 * it to a PE (doca_pe_connect_ctx) and start it with doca_ctx_start. An event started with
 * doca_sync_event_start cannot become a context (NULL), and a context cannot be started with
 * doca_sync_event_start.
 */
DOCA_EXPERIMENTAL
struct doca_ctx *doca_sync_event_as_ctx(struct doca_sync_event *event);

/* Synchronous operations on a started event. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_get(struct doca_sync_event *event, uint64_t *value);

/* Adds value atomically; *fetched (may be NULL) gets the value before. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_update_add(struct doca_sync_event *event, uint64_t value,
					uint64_t *fetched);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_update_set(struct doca_sync_event *event, uint64_t value);

/* Waits until (counter & mask) > value; the _yield forms give the CPU away between polls. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_gt(struct doca_sync_event *event, uint64_t value, uint64_t mask);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_gt_yield(struct doca_sync_event *event, uint64_t value,
					   uint64_t mask);

/* Waits until (counter & mask) == value. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_eq(struct doca_sync_event *event, uint64_t value, uint64_t mask);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_eq_yield(struct doca_sync_event *event, uint64_t value,
					   uint64_t mask);

/* Waits until (counter & mask) != value. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_neq(struct doca_sync_event *event, uint64_t value, uint64_t mask);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_wait_neq_yield(struct doca_sync_event *event, uint64_t value,
					    uint64_t mask);

/* The handle kernels of `dpa` use (the event has a DPA location and is started). */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_get_dpa_handle(struct doca_sync_event *event, struct doca_dpa *dpa,
					    doca_dpa_dev_sync_event_t *dpa_dev_se_handle);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_is_export_to_dpa_supported(const struct doca_devinfo *devinfo);

/*
 * Export to the remote PCI side: an opaque blob (owned by the event, valid until it is destroyed)
 * that the other side passes to doca_sync_event_create_from_export. The publisher and the
 * subscriber must each be the CPU or the remote PCI side.
 */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_export_to_remote_pci(struct doca_sync_event *event,
						  struct doca_dev *dev, const uint8_t **data,
						  size_t *sz);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_is_export_to_remote_pci_supported(const struct doca_devinfo *devinfo);

/* The event exported from the other side of the PCI link; it cannot be configured. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_create_from_export(struct doca_dev *dev, const uint8_t *data,
						size_t sz, struct doca_sync_event **event);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_is_create_from_export_supported(const struct doca_devinfo *devinfo);

/* Remote network peers and GPUs: NOT_SUPPORTED on the soft device. */
DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_export_to_remote_net(struct doca_sync_event *event,
						  const uint8_t **data, size_t *sz);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_is_export_to_remote_net_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_remote_net_create_from_export(struct doca_dev *dev,
							   const uint8_t *data, size_t sz,
							   struct doca_sync_event_remote_net **event);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_cap_remote_net_is_create_from_export_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_remote_net_destroy(struct doca_sync_event_remote_net *event);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_remote_net_get_dpa_handle(struct doca_sync_event_remote_net *event,
					  struct doca_dpa *dpa,
					  doca_dpa_dev_sync_event_remote_net_t *dpa_remote_event);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_cap_remote_net_is_export_to_dpa_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_get_gpu_handle(struct doca_sync_event *event, struct doca_gpu *gpu,
					    doca_gpu_dev_sync_event_t **gpu_dev_se);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_is_export_to_gpu_supported(const struct doca_devinfo *devinfo);

/*
 * The task interface (through doca_sync_event_as_ctx). Each alloc_init answers
 * DOCA_ERROR_NO_MEMORY when the pool is empty; a wait mask is 0, 1, 2, 4 or 8 consecutive 0xFF
 * bytes. Tasks run at the next doca_pe_progress; a wait completes at the first progress that
 * finds its condition true. Stopping the context completes waits still submitted with an error.
 */
struct doca_sync_event_task_get;
struct doca_sync_event_task_notify_set;
struct doca_sync_event_task_notify_add;
struct doca_sync_event_task_wait_eq;
struct doca_sync_event_task_wait_neq;

typedef void (*doca_sync_event_task_get_completion_cb_t)(struct doca_sync_event_task_get *task,
							 union doca_data task_user_data,
							 union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_notify_set_completion_cb_t)(
	struct doca_sync_event_task_notify_set *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_notify_add_completion_cb_t)(
	struct doca_sync_event_task_notify_add *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_wait_eq_completion_cb_t)(
	struct doca_sync_event_task_wait_eq *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_wait_neq_completion_cb_t)(
	struct doca_sync_event_task_wait_neq *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_task_get_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_task_notify_set_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_task_notify_add_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_task_wait_eq_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_cap_task_wait_neq_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_get_set_conf(struct doca_sync_event *event,
					       doca_sync_event_task_get_completion_cb_t completion_cb,
					       doca_sync_event_task_get_completion_cb_t error_cb,
					       uint32_t num_tasks);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_task_notify_set_set_conf(struct doca_sync_event *event,
					 doca_sync_event_task_notify_set_completion_cb_t completion_cb,
					 doca_sync_event_task_notify_set_completion_cb_t error_cb,
					 uint32_t num_tasks);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_task_notify_add_set_conf(struct doca_sync_event *event,
					 doca_sync_event_task_notify_add_completion_cb_t completion_cb,
					 doca_sync_event_task_notify_add_completion_cb_t error_cb,
					 uint32_t num_tasks);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_task_wait_eq_set_conf(struct doca_sync_event *event,
				      doca_sync_event_task_wait_eq_completion_cb_t completion_cb,
				      doca_sync_event_task_wait_eq_completion_cb_t error_cb,
				      uint32_t num_tasks);

DOCA_EXPERIMENTAL
doca_error_t
doca_sync_event_task_wait_neq_set_conf(struct doca_sync_event *event,
				       doca_sync_event_task_wait_neq_completion_cb_t completion_cb,
				       doca_sync_event_task_wait_neq_completion_cb_t error_cb,
				       uint32_t num_tasks);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_get_alloc_init(struct doca_sync_event *event,
						 uint64_t *ret_val_ptr, union doca_data user_data,
						 struct doca_sync_event_task_get **task);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_notify_set_alloc_init(struct doca_sync_event *event,
							uint64_t set_val, union doca_data user_data,
							struct doca_sync_event_task_notify_set **task);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_notify_add_alloc_init(struct doca_sync_event *event,
							uint64_t inc_val, uint64_t *fetched_val_ptr,
							union doca_data user_data,
							struct doca_sync_event_task_notify_add **task);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_wait_eq_alloc_init(struct doca_sync_event *event,
						     uint64_t wait_val, uint64_t mask,
						     union doca_data user_data,
						     struct doca_sync_event_task_wait_eq **task);

DOCA_EXPERIMENTAL
doca_error_t doca_sync_event_task_wait_neq_alloc_init(struct doca_sync_event *event,
						      uint64_t wait_val, uint64_t mask,
						      union doca_data user_data,
						      struct doca_sync_event_task_wait_neq **task);

DOCA_EXPERIMENTAL
struct doca_task *doca_sync_event_task_get_as_doca_task(struct doca_sync_event_task_get *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_get_set_ret_val_ptr(struct doca_sync_event_task_get *task,
					      uint64_t *ret_val_ptr);

DOCA_EXPERIMENTAL
uint64_t *doca_sync_event_task_get_get_ret_val_ptr(const struct doca_sync_event_task_get *task);

DOCA_EXPERIMENTAL
struct doca_task *
doca_sync_event_task_notify_set_as_doca_task(struct doca_sync_event_task_notify_set *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_notify_set_set_set_val(struct doca_sync_event_task_notify_set *task,
						 uint64_t set_val);

DOCA_EXPERIMENTAL
uint64_t
doca_sync_event_task_notify_set_get_set_val(const struct doca_sync_event_task_notify_set *task);

DOCA_EXPERIMENTAL
struct doca_task *
doca_sync_event_task_notify_add_as_doca_task(struct doca_sync_event_task_notify_add *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_notify_add_set_inc_val(struct doca_sync_event_task_notify_add *task,
						 uint64_t inc_val);

DOCA_EXPERIMENTAL
uint64_t
doca_sync_event_task_notify_add_get_inc_val(const struct doca_sync_event_task_notify_add *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_notify_add_set_fetched_val_ptr(
	struct doca_sync_event_task_notify_add *task, uint64_t *fetched_val_ptr);

DOCA_EXPERIMENTAL
uint64_t *doca_sync_event_task_notify_add_get_fetched_val_ptr(
	const struct doca_sync_event_task_notify_add *task);

DOCA_EXPERIMENTAL
struct doca_task *doca_sync_event_task_wait_eq_as_doca_task(struct doca_sync_event_task_wait_eq *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_wait_eq_set_wait_val(struct doca_sync_event_task_wait_eq *task,
					       uint64_t wait_val);

DOCA_EXPERIMENTAL
uint64_t doca_sync_event_task_wait_eq_get_wait_val(const struct doca_sync_event_task_wait_eq *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_wait_eq_set_mask(struct doca_sync_event_task_wait_eq *task,
					   uint64_t mask);

DOCA_EXPERIMENTAL
uint64_t doca_sync_event_task_wait_eq_get_mask(const struct doca_sync_event_task_wait_eq *task);

DOCA_EXPERIMENTAL
struct doca_task *
doca_sync_event_task_wait_neq_as_doca_task(struct doca_sync_event_task_wait_neq *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_wait_neq_set_wait_val(struct doca_sync_event_task_wait_neq *task,
						uint64_t wait_val);

DOCA_EXPERIMENTAL
uint64_t
doca_sync_event_task_wait_neq_get_wait_val(const struct doca_sync_event_task_wait_neq *task);

DOCA_EXPERIMENTAL
void doca_sync_event_task_wait_neq_set_mask(struct doca_sync_event_task_wait_neq *task,
					    uint64_t mask);

DOCA_EXPERIMENTAL
uint64_t doca_sync_event_task_wait_neq_get_mask(const struct doca_sync_event_task_wait_neq *task);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_SYNC_EVENT_H */
