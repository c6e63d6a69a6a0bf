/*
 * dpakit soft device: Comch consumers, the receiving end of a queue.
 *
 * A consumer is a context. On the CPU it receives through post-receive tasks driven by a
 * progress engine; with doca_ctx_set_datapath_on_dpa its datapath runs in DPA kernels, which
 * post receives with doca_dpa_dev_comch_consumer_ack and find messages in the consumer
 * completion context set with doca_comch_consumer_set_completion.
 */
#ifndef DOCA_COMCH_CONSUMER_H
#define DOCA_COMCH_CONSUMER_H

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
struct doca_dpa_thread;
struct doca_task;
struct doca_comch_consumer;
struct doca_comch_consumer_task_post_recv;
struct doca_comch_consumer_completion;

typedef void (*doca_comch_consumer_task_post_recv_completion_cb_t)(
	struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

struct doca_mmap;

/* A consumer on an established connection: receive buffers come from buf_mmap, which needs
 * PCI read-write access. */
DOCA_STABLE
doca_error_t doca_comch_consumer_create(struct doca_comch_connection *comch_connection,
					struct doca_mmap *buf_mmap,
					struct doca_comch_consumer **consumer);

/* Capabilities. */
DOCA_STABLE
doca_error_t doca_comch_consumer_cap_is_supported(const struct doca_devinfo *devinfo);

DOCA_STABLE
doca_error_t doca_comch_consumer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
						       uint32_t *max_num_tasks);

DOCA_STABLE
doca_error_t doca_comch_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
						      uint32_t *max_buf_size);

/* The context must be IDLE. */
DOCA_STABLE
doca_error_t doca_comch_consumer_destroy(struct doca_comch_consumer *consumer);

DOCA_STABLE
struct doca_ctx *doca_comch_consumer_as_ctx(struct doca_comch_consumer *consumer);

/* The id producers address this consumer by (unique per queue or connection). */
DOCA_STABLE
doca_error_t doca_comch_consumer_get_id(const struct doca_comch_consumer *consumer, uint32_t *id);

/* Largest immediate this consumer accepts (at most 32 bytes on a MsgQ). */
DOCA_STABLE
doca_error_t doca_comch_consumer_set_imm_data_len(struct doca_comch_consumer *consumer,
						  uint32_t imm_data_len);

/* Post-receive tasks: callbacks and pool size, before start. */
DOCA_STABLE
doca_error_t doca_comch_consumer_task_post_recv_set_conf(
	struct doca_comch_consumer *consumer,
	doca_comch_consumer_task_post_recv_completion_cb_t task_completion_cb,
	doca_comch_consumer_task_post_recv_completion_cb_t task_error_cb,
	uint32_t num_post_recv_tasks);

/* A post-receive task; `buf` is NULL on a MsgQ (immediate data only). */
DOCA_STABLE
doca_error_t doca_comch_consumer_task_post_recv_alloc_init(
	struct doca_comch_consumer *consumer, struct doca_buf *buf,
	struct doca_comch_consumer_task_post_recv **task);

DOCA_STABLE
struct doca_task *
doca_comch_consumer_task_post_recv_as_task(struct doca_comch_consumer_task_post_recv *task);

DOCA_STABLE
struct doca_buf *
doca_comch_consumer_task_post_recv_get_buf(const struct doca_comch_consumer_task_post_recv *task);

/* The immediate data of a completed receive; valid until the task is resubmitted or freed. */
DOCA_STABLE
const uint8_t *doca_comch_consumer_task_post_recv_get_imm_data(
	const struct doca_comch_consumer_task_post_recv *task);

DOCA_STABLE
uint32_t doca_comch_consumer_task_post_recv_get_imm_data_len(
	const struct doca_comch_consumer_task_post_recv *task);

/* The id of the producer that filled the receive. */
DOCA_STABLE
uint32_t doca_comch_consumer_task_post_recv_get_producer_id(
	const struct doca_comch_consumer_task_post_recv *task);

/* DPA consumers: receives the kernel may have posted at once. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_set_dev_max_num_recv(struct doca_comch_consumer *consumer,
						      uint32_t dev_num_recv);

/* DPA consumers: where received messages appear, and a tag identifying this consumer there. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_set_completion(struct doca_comch_consumer *consumer,
						struct doca_comch_consumer_completion *consumer_comp,
						uint32_t user_data);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_get_dpa_handle(struct doca_comch_consumer *consumer,
						doca_dpa_dev_comch_consumer_t *dpa_consumer);

/* Consumer completion contexts: where DPA consumers report received messages. */
DOCA_EXPERIMENTAL
doca_error_t
doca_comch_consumer_completion_create(struct doca_comch_consumer_completion **consumer_comp);

DOCA_EXPERIMENTAL
doca_error_t
doca_comch_consumer_completion_destroy(struct doca_comch_consumer_completion *consumer_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_completion_set_max_num_consumers(
	struct doca_comch_consumer_completion *consumer_comp, uint32_t max_num_consumers);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_completion_set_max_num_recv(
	struct doca_comch_consumer_completion *consumer_comp, uint32_t max_num_recv);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_completion_set_imm_data_len(
	struct doca_comch_consumer_completion *consumer_comp, uint32_t imm_data_len);

/* The DPA thread triggered when a message arrives. */
DOCA_EXPERIMENTAL
doca_error_t
doca_comch_consumer_completion_set_dpa_thread(struct doca_comch_consumer_completion *consumer_comp,
					      struct doca_dpa_thread *dpa_thread);

DOCA_EXPERIMENTAL
doca_error_t
doca_comch_consumer_completion_start(struct doca_comch_consumer_completion *consumer_comp);

/* Fails with IN_USE while consumers still report to it. */
DOCA_EXPERIMENTAL
doca_error_t
doca_comch_consumer_completion_stop(struct doca_comch_consumer_completion *consumer_comp);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_consumer_completion_get_dpa_handle(
	struct doca_comch_consumer_completion *consumer_comp,
	doca_dpa_dev_comch_consumer_completion_t *consumer_comp_handle);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMCH_CONSUMER_H */
