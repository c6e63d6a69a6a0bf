/*
 * dpakit soft device: Comch MsgQ, one-direction queues between the CPU and the DPA.
 *
 * A MsgQ needs no server, client or connection. doca_comch_msgq_set_dpa_consumer makes a
 * CPU -> DPA queue (DPA consumers, CPU producers), doca_comch_msgq_set_dpa_producer a DPA -> CPU
 * queue (DPA producers, CPU consumers). Endpoints are created from a started queue and carry
 * immediate data only (at most 32 bytes); a queue cannot stop while endpoints exist.
 */
#ifndef DOCA_COMCH_MSGQ_H
#define DOCA_COMCH_MSGQ_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_comch.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_comch_msgq;
struct doca_comch_consumer;
struct doca_comch_producer;
struct doca_dev;
struct doca_dpa;

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_create(struct doca_dev *dev, struct doca_comch_msgq **msgq);

/* The queue must be stopped and its consumers and producers destroyed. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_destroy(struct doca_comch_msgq *msgq);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_set_max_num_consumers(struct doca_comch_msgq *msgq,
						   uint32_t max_num_consumers);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_set_max_num_producers(struct doca_comch_msgq *msgq,
						   uint32_t max_num_producers);

/* Direction CPU -> DPA: consumers run on `dpa`. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_set_dpa_consumer(struct doca_comch_msgq *msgq, struct doca_dpa *dpa);

/* Direction DPA -> CPU: producers run on `dpa`. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_set_dpa_producer(struct doca_comch_msgq *msgq, struct doca_dpa *dpa);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_start(struct doca_comch_msgq *msgq);

/* Fails with IN_USE while consumers or producers of the queue exist. */
DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_stop(struct doca_comch_msgq *msgq);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_consumer_create(struct doca_comch_msgq *msgq,
					     struct doca_comch_consumer **consumer);

DOCA_EXPERIMENTAL
doca_error_t doca_comch_msgq_producer_create(struct doca_comch_msgq *msgq,
					     struct doca_comch_producer **producer);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMCH_MSGQ_H */
