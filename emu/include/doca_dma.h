/*
 * dpakit soft device: DMA, declared only.
 *
 * The soft device does not model the DMA library (DPA kernels copy with
 * doca_dpa_dev_comch_producer_dma_copy). Creating a DMA context answers DOCA_ERROR_NOT_SUPPORTED,
 * capability queries answer that it is not supported, and every other call refuses its handle.
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

typedef void (*doca_dma_task_memcpy_completion_cb_t)(struct doca_dma_task_memcpy *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);

DOCA_STABLE
doca_error_t doca_dma_create(struct doca_dev *dev, struct doca_dma **dma);

DOCA_STABLE
doca_error_t doca_dma_destroy(struct doca_dma *dma);

DOCA_STABLE
struct doca_ctx *doca_dma_as_ctx(struct doca_dma *dma);

/* Capabilities: not supported by the soft device. */
DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_is_supported(const struct doca_devinfo *devinfo);

DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_get_max_buf_size(const struct doca_devinfo *devinfo,
						       uint64_t *buf_size);

DOCA_STABLE
doca_error_t doca_dma_cap_task_memcpy_get_max_buf_list_len(const struct doca_devinfo *devinfo,
							   uint32_t *max_buf_list_len);

/* Memcpy tasks. */
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

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DMA_H */
