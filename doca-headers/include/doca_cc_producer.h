/*
 * dpakit soft device: Comm Channel producers under their DOCA 2.5 names (doca_cc_producer_*).
 *
 * DOCA 2.7 renamed them Comch producers (doca_comch_producer.h). These are the 2.5 names, for
 * programs written against DOCA 2.5: thin wrappers (emu/csrc/cc.c) that the soft device serves
 * with its Comch producers. As in 2.5, a producer sends buffers from the CPU only (no immediate
 * data, no DPA datapath). As in DOCA 2.5, every function is experimental:
 * define DOCA_ALLOW_EXPERIMENTAL_API to use them without warnings.
 */
#ifndef DOCA_CC_PRODUCER_H
#define DOCA_CC_PRODUCER_H

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
struct doca_task;
struct doca_cc_producer;
struct doca_cc_producer_task_send;

typedef void (*doca_cc_producer_task_send_completion_cb_t)(
	struct doca_cc_producer_task_send *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

/* A producer on an established connection. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_create(struct doca_cc_connection *cc_connection,
				     struct doca_cc_producer **producer);

/* Capabilities. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_cap_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
						    uint32_t *max_num_tasks);

DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
						   uint32_t *max_buf_size);

/* The context must be IDLE. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_destroy(struct doca_cc_producer *producer);

DOCA_EXPERIMENTAL
struct doca_ctx *doca_cc_producer_as_ctx(struct doca_cc_producer *producer);

/* The id consumers see with each message from this producer. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_get_id(const struct doca_cc_producer *producer, uint32_t *id);

/* Send tasks: callbacks and pool size, before start. */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_task_send_set_conf(
	struct doca_cc_producer *producer,
	doca_cc_producer_task_send_completion_cb_t task_completion_cb,
	doca_cc_producer_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);

/* A send task of `buf` to consumer `consumer_id` (2.5 has no immediate data). */
DOCA_EXPERIMENTAL
doca_error_t doca_cc_producer_task_send_alloc_init(struct doca_cc_producer *producer,
						   struct doca_buf *buf, uint32_t consumer_id,
						   struct doca_cc_producer_task_send **task);

DOCA_EXPERIMENTAL
struct doca_task *doca_cc_producer_task_send_as_task(struct doca_cc_producer_task_send *task);

/* The task's buffer; 2.5 hands it back writable (2.7 made it const). */
DOCA_EXPERIMENTAL
struct doca_buf *doca_cc_producer_task_send_get_buf(const struct doca_cc_producer_task_send *task);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_CC_PRODUCER_H */
