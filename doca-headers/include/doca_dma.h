/*
 * dpakit soft device: DMA.
 *
 * A DMA context copies the data of a source buffer to a destination buffer (memcpy tasks).
 * Create it on a device, configure its memcpy tasks, connect it to a progress engine and start
 * it; then allocate tasks, submit them with doca_task_submit, and doca_pe_progress runs the
 * completion (or error) callback of each, in submission order.
 *
 * On the soft device the bytes land after the destination's data (at its data pointer plus its
 * data length), and the destination's data length grows by the length copied. A task's buffers
 * are checked when it is submitted (see docs/soft-device.md, "DMA").
 */
#ifndef DOCA_DMA_H
#define DOCA_DMA_H

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
struct doca_task;

struct doca_dma;
struct doca_dma_task_memcpy;

/* One callback type serves success and error; the callback owns the task (resubmit or free). */
typedef void (*doca_dma_task_memcpy_completion_cb_t)(struct doca_dma_task_memcpy *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);

/* The context. The device must outlive it. */
DOCA_STABLE
doca_error_t doca_dma_create(struct doca_dev *dev, struct doca_dma **dma);

DOCA_STABLE
doca_error_t doca_dma_destroy(struct doca_dma *dma);

DOCA_STABLE
struct doca_ctx *doca_dma_as_ctx(struct doca_dma *dma);

/* Capabilities. */
DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_is_supported(const struct doca_devinfo *devinfo);

DOCA_STABLE
doca_error_t doca_dma_cap_get_max_num_tasks(struct doca_dma *dma, uint32_t *max_num_tasks);

DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_get_max_buf_size(const struct doca_devinfo *devinfo,
						       uint64_t *buf_size);

DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_get_max_buf_list_len(const struct doca_devinfo *devinfo,
							   uint32_t *max_buf_list_len);

/* Memcpy tasks: configured before start. */
DOCA_STABLE
doca_error_t doca_dma_task_memcpy_set_conf(struct doca_dma *dma,
					   doca_dma_task_memcpy_completion_cb_t task_completion_cb,
					   doca_dma_task_memcpy_completion_cb_t task_error_cb,
					   uint32_t num_memcpy_tasks);

DOCA_STABLE
doca_error_t doca_dma_task_memcpy_alloc_init(struct doca_dma *dma, const struct doca_buf *src,
					     struct doca_buf *dst, union doca_data user_data,
					     struct doca_dma_task_memcpy **task);

DOCA_STABLE
struct doca_task *doca_dma_task_memcpy_as_task(struct doca_dma_task_memcpy *task);

DOCA_STABLE
void doca_dma_task_memcpy_set_src(struct doca_dma_task_memcpy *task, const struct doca_buf *src);

DOCA_STABLE
const struct doca_buf *doca_dma_task_memcpy_get_src(const struct doca_dma_task_memcpy *task);

DOCA_STABLE
void doca_dma_task_memcpy_set_dst(struct doca_dma_task_memcpy *task, struct doca_buf *dst);

DOCA_STABLE
struct doca_buf *doca_dma_task_memcpy_get_dst(const struct doca_dma_task_memcpy *task);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DMA_H */
