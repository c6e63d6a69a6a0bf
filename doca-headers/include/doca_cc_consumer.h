/*
 * dpakit soft device: Comm Channel consumers under their DOCA 2.5 names (doca_cc_consumer_*).
 *
 * DOCA 2.7 renamed them Comch consumers (doca_comch_consumer.h). These are the 2.5 names, for
 * programs written against DOCA 2.5: thin wrappers (emu/csrc/cc.c) that the soft device serves
 * with its Comch consumers. As in 2.5, a consumer receives into buffers on the CPU only (no
 * immediate data, no DPA datapath). As in DOCA 2.5, every function is
 * experimental: define DOCA_ALLOW_EXPERIMENTAL_API to use them without warnings.
 */
#ifndef DOCA_CC_CONSUMER_H
#define DOCA_CC_CONSUMER_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>
#include <doca_cc.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;
struct doca_ctx;
struct doca_devinfo;
struct doca_mmap;
struct doca_task;
struct doca_cc_consumer;
struct doca_cc_consumer_task_post_recv;

typedef void (*doca_cc_consumer_task_post_recv_completion_cb_t)(
	struct doca_cc_consumer_task_post_recv *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

/* A consumer on an established connection, receiving into buffers of buf_mmap. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_create(struct doca_cc_connection *cc_connection,
				     struct doca_mmap *buf_mmap,
				     struct doca_cc_consumer **consumer);

/* Capabilities. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_cap_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
						    uint32_t *max_num_tasks);

DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
						   uint32_t *max_buf_size);

/* The context must be IDLE. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_destroy(struct doca_cc_consumer *consumer);

DOCA_EXPERIMENTAL
struct doca_ctx *doca_cc_consumer_as_ctx(struct doca_cc_consumer *consumer);

/* The id producers address this consumer by. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_get_id(const struct doca_cc_consumer *consumer, uint32_t *id);

/* Post-receive tasks: callbacks and pool size, before start. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_task_post_recv_set_conf(
	struct doca_cc_consumer *consumer,
	doca_cc_consumer_task_post_recv_completion_cb_t task_completion_cb,
	doca_cc_consumer_task_post_recv_completion_cb_t task_error_cb,
	uint32_t num_post_recv_tasks);

DOCA_EXPERIMENTAL
doca_error_t doca_cc_consumer_task_post_recv_alloc_init(struct doca_cc_consumer *consumer,
							struct doca_buf *buf,
							struct doca_cc_consumer_task_post_recv **task);

DOCA_EXPERIMENTAL
struct doca_task *
doca_cc_consumer_task_post_recv_as_task(struct doca_cc_consumer_task_post_recv *task);

DOCA_EXPERIMENTAL
struct doca_buf *
doca_cc_consumer_task_post_recv_get_buf(const struct doca_cc_consumer_task_post_recv *task);

/* The id of the producer that filled the receive. */
DOCA_EXPERIMENTAL
uint32_t doca_cc_consumer_task_post_recv_get_producer_id(
	const struct doca_cc_consumer_task_post_recv *task);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_CC_CONSUMER_H */
