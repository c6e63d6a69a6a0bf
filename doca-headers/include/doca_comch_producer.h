/*
 * dpakit soft device: Comch producers, the sending end of a queue.
 *
 * A producer is a context. On the CPU it sends with send tasks driven by a progress engine; a
 * send to a consumer with no receive posted waits, in order, until one is posted. With
 * doca_ctx_set_datapath_on_dpa its datapath runs in DPA kernels, which report sends to the DPA
 * completion attached with doca_comch_producer_dpa_completion_attach.
 */
#ifndef DOCA_COMCH_PRODUCER_H
#define DOCA_COMCH_PRODUCER_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>
#include <doca_comch.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;
struct doca_ctx;
struct doca_devinfo;
struct doca_dpa_completion;
struct doca_task;
struct doca_comch_producer;
struct doca_comch_producer_task_send;

typedef void (*doca_comch_producer_task_send_completion_cb_t)(
	struct doca_comch_producer_task_send *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

/* A producer on an established connection. */
DOCA_STABLE
doca_error_t doca_comch_producer_create(struct doca_comch_connection *comch_connection,
					struct doca_comch_producer **producer);

/* Capabilities. */
DOCA_STABLE
doca_error_t doca_comch_producer_cap_is_supported(const struct doca_devinfo *devinfo);

DOCA_STABLE
doca_error_t doca_comch_producer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
						       uint32_t *max_num_tasks);

DOCA_STABLE
doca_error_t doca_comch_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
						      uint32_t *max_buf_size);

/* The context must be IDLE. */
DOCA_STABLE
doca_error_t doca_comch_producer_destroy(struct doca_comch_producer *producer);

DOCA_STABLE
struct doca_ctx *doca_comch_producer_as_ctx(struct doca_comch_producer *producer);

/* The id consumers see with each message from this producer. */
DOCA_STABLE
doca_error_t doca_comch_producer_get_id(const struct doca_comch_producer *producer, uint32_t *id);

/* Send tasks: callbacks and pool size, before start. */
DOCA_STABLE
doca_error_t doca_comch_producer_task_send_set_conf(
	struct doca_comch_producer *producer,
	doca_comch_producer_task_send_completion_cb_t task_completion_cb,
	doca_comch_producer_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);

/*
 * A send task to consumer `consumer_id` carrying `imm_data_len` bytes of immediate data (copied
 * here) and, off a MsgQ, a buffer; `buf` is NULL on a MsgQ.
 */
DOCA_STABLE
doca_error_t doca_comch_producer_task_send_alloc_init(struct doca_comch_producer *producer,
						      const struct doca_buf *buf, uint8_t *imm_data,
						      uint32_t imm_data_len, uint32_t consumer_id,
						      struct doca_comch_producer_task_send **task);

DOCA_STABLE
struct doca_task *doca_comch_producer_task_send_as_task(struct doca_comch_producer_task_send *task);

DOCA_STABLE
const struct doca_buf *
doca_comch_producer_task_send_get_buf(const struct doca_comch_producer_task_send *task);

/* DPA producers: sends in flight without a reported completion. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_producer_set_dev_max_num_send(struct doca_comch_producer *producer,
						      uint32_t dev_num_send);

/* DPA producers: where send completions are reported. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_producer_dpa_completion_attach(struct doca_comch_producer *producer,
						       struct doca_dpa_completion *dpa_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_producer_get_dpa_handle(struct doca_comch_producer *producer,
						doca_dpa_dev_comch_producer_t *dpa_producer);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMCH_PRODUCER_H */
