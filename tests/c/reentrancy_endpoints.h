/*
 * The fast-path endpoints of the re-entrancy matrix (reentrancy_comch.c): a consumer posting
 * buffers of its own mmap and a producer sending buffers of its own, on one Comch connection,
 * used the same way by the side under test and by its peer. Included once, after reentrancy.h.
 */
#ifndef DPAKIT_TESTS_REENTRANCY_ENDPOINTS_H
#define DPAKIT_TESTS_REENTRANCY_ENDPOINTS_H

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_producer.h>
#include <doca_dev.h>
#include <doca_mmap.h>

#define EP_BUFS 4	   /* receives a consumer posts, sends a producer has */
#define EP_RECV_SIZE 256   /* a consumer's buffers */
#define EP_SEND_SIZE 1024  /* a producer's buffers: larger, so a send can be too big on purpose */
#define EP_PAGE 4096

/* Registered memory cut into buffers. */
struct ep_memory {
	void *mem;
	struct doca_mmap *mmap;
	struct doca_buf_inventory *inv;
	struct doca_buf *bufs[EP_BUFS];
};

static inline doca_error_t ep_memory_create(struct doca_dev *dev, size_t size, uint32_t access, struct ep_memory *m)
{
	doca_error_t result;

	m->mem = aligned_alloc(EP_PAGE, EP_BUFS * size);
	if (m->mem == NULL)
		return DOCA_ERROR_NO_MEMORY;
	result = doca_mmap_create(&m->mmap);
	if (result != DOCA_SUCCESS)
		return result;
	result = doca_mmap_set_memrange(m->mmap, m->mem, EP_BUFS * size);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_set_permissions(m->mmap, access);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_add_dev(m->mmap, dev);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_start(m->mmap);
	if (result == DOCA_SUCCESS)
		result = doca_buf_inventory_create(EP_BUFS, &m->inv);
	if (result == DOCA_SUCCESS)
		result = doca_buf_inventory_start(m->inv);
	for (uint32_t i = 0; i < EP_BUFS && result == DOCA_SUCCESS; i++)
		result = doca_buf_inventory_buf_get_by_addr(m->inv, m->mmap, (uint8_t *)m->mem + i * size, size,
							     &m->bufs[i]);
	return result;
}

/* Frees what ep_memory_create made; false if DOCA refused a step. */
static inline bool ep_memory_destroy(struct ep_memory *m)
{
	bool ok = true;

	for (uint32_t i = 0; i < EP_BUFS; i++) {
		if (m->bufs[i] != NULL && doca_buf_dec_refcount(m->bufs[i], NULL) != DOCA_SUCCESS)
			ok = false;
		m->bufs[i] = NULL;
	}
	if (m->inv != NULL && doca_buf_inventory_destroy(m->inv) != DOCA_SUCCESS)
		ok = false;
	if (m->mmap != NULL && doca_mmap_destroy(m->mmap) != DOCA_SUCCESS)
		ok = false;
	free(m->mem);
	m->inv = NULL;
	m->mmap = NULL;
	m->mem = NULL;
	return ok;
}

static inline doca_error_t ep_destroy_consumer(void *handle)
{
	return doca_comch_consumer_destroy(handle);
}

static inline doca_error_t ep_destroy_producer(void *handle)
{
	return doca_comch_producer_destroy(handle);
}

/* The callbacks an owner gives its endpoints. */
struct ep_callbacks {
	doca_comch_consumer_task_post_recv_completion_cb_t recv_done, recv_failed;
	doca_comch_producer_task_send_completion_cb_t send_done, send_failed;
	doca_ctx_state_changed_callback_t consumer_state, producer_state;
};

/* A consumer and a producer on one connection. */
struct ep_pair {
	struct reent_obj consumer, producer;
	struct ep_memory recv_mem, send_mem;
	uint32_t consumer_id;	   /* this consumer's id */
	uint32_t peer_consumer_id; /* the peer's consumer, once announced (0: none yet) */
	uint32_t free_sends;	   /* bit i: send buffer i is not in flight */
	uint32_t received, sent, send_errors;
};

/*
 * Creates and starts both endpoints on `conn`, each context's user data `user_data`: the consumer
 * answers IN_PROGRESS (it registers with the peer through progress), the producer SUCCESS. The
 * consumer posts its receives once RUNNING (ep_post_all, from its state callback).
 */
static inline doca_error_t ep_pair_create(struct ep_pair *p, struct doca_dev *dev, struct doca_pe *pe,
					  struct doca_comch_connection *conn, const struct ep_callbacks *cbs,
					  union doca_data user_data)
{
	struct doca_comch_consumer *consumer = NULL;
	struct doca_comch_producer *producer = NULL;
	doca_error_t result;

	p->consumer = (struct reent_obj){.name = "consumer", .destroy = ep_destroy_consumer};
	p->producer = (struct reent_obj){.name = "producer", .destroy = ep_destroy_producer};
	p->free_sends = (1u << EP_BUFS) - 1;
	result = ep_memory_create(dev, EP_RECV_SIZE, DOCA_ACCESS_FLAG_PCI_READ_WRITE, &p->recv_mem);
	if (result == DOCA_SUCCESS)
		result = ep_memory_create(dev, EP_SEND_SIZE, DOCA_ACCESS_FLAG_PCI_READ_WRITE, &p->send_mem);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_create(conn, p->recv_mem.mmap, &consumer);
	if (result != DOCA_SUCCESS)
		return result;
	p->consumer.handle = consumer;
	p->consumer.ctx = doca_comch_consumer_as_ctx(consumer);
	result = doca_comch_consumer_task_post_recv_set_conf(consumer, cbs->recv_done, cbs->recv_failed, EP_BUFS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(p->consumer.ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(p->consumer.ctx, cbs->consumer_state);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, p->consumer.ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(p->consumer.ctx);
	if (result != DOCA_ERROR_IN_PROGRESS)
		return result == DOCA_SUCCESS ? DOCA_ERROR_UNEXPECTED : result;
	result = doca_comch_consumer_get_id(consumer, &p->consumer_id);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_create(conn, &producer);
	if (result != DOCA_SUCCESS)
		return result;
	p->producer.handle = producer;
	p->producer.ctx = doca_comch_producer_as_ctx(producer);
	result = doca_comch_producer_task_send_set_conf(producer, cbs->send_done, cbs->send_failed, EP_BUFS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(p->producer.ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(p->producer.ctx, cbs->producer_state);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, p->producer.ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(p->producer.ctx);
	return result;
}

/* Posts a receive for each of the consumer's buffers (from its state callback, once RUNNING). */
static inline doca_error_t ep_post_all(struct ep_pair *p)
{
	for (uint32_t i = 0; i < EP_BUFS; i++) {
		struct doca_comch_consumer_task_post_recv *task;
		doca_error_t result = doca_comch_consumer_task_post_recv_alloc_init(p->consumer.handle,
										    p->recv_mem.bufs[i], &task);

		if (result == DOCA_SUCCESS) {
			result = doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task));
			if (result != DOCA_SUCCESS)
				doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
		}
		if (result != DOCA_SUCCESS)
			return result;
	}
	return DOCA_SUCCESS;
}

/* Sends `len` bytes from a free send buffer to the peer's consumer. */
static inline doca_error_t ep_send(struct ep_pair *p, size_t len)
{
	static uint8_t imm[4] = {'r', 'e', 'e', 'n'};
	struct doca_comch_producer_task_send *task;
	doca_error_t result;
	uint32_t i;

	if (p->free_sends == 0)
		return DOCA_ERROR_AGAIN;
	if (p->peer_consumer_id == 0 || p->producer.handle == NULL)
		return DOCA_ERROR_NOT_CONNECTED;
	i = (uint32_t)__builtin_ctz(p->free_sends);
	memset((uint8_t *)p->send_mem.mem + i * EP_SEND_SIZE, (int)(p->sent & 0xff), len);
	result = doca_buf_set_data(p->send_mem.bufs[i], (uint8_t *)p->send_mem.mem + i * EP_SEND_SIZE, len);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_task_send_alloc_init(p->producer.handle, p->send_mem.bufs[i], imm,
								  sizeof(imm), p->peer_consumer_id, &task);
	if (result != DOCA_SUCCESS)
		return result;
	doca_task_set_user_data(doca_comch_producer_task_send_as_task(task), (union doca_data){.u64 = i});
	result = doca_task_submit(doca_comch_producer_task_send_as_task(task));
	if (result != DOCA_SUCCESS) {
		doca_task_free(doca_comch_producer_task_send_as_task(task));
		return result;
	}
	p->free_sends &= ~(1u << i);
	p->sent++;
	return DOCA_SUCCESS;
}

/* A send finished: its buffer is free again. */
static inline void ep_send_finished(struct ep_pair *p, union doca_data task_user_data)
{
	if (task_user_data.u64 < EP_BUFS)
		p->free_sends |= 1u << task_user_data.u64;
}

/* Whether either endpoint still exists (a Comch server or client cannot stop while one does). */
static inline bool ep_pair_exists(const void *arg)
{
	const struct ep_pair *p = arg;

	return p->consumer.handle != NULL || p->producer.handle != NULL;
}

/* Memory goes once both endpoints are destroyed; false if DOCA refused a step. */
static inline bool ep_pair_free_memory(struct ep_pair *p)
{
	bool ok = ep_memory_destroy(&p->recv_mem);

	return ep_memory_destroy(&p->send_mem) && ok;
}

#endif /* DPAKIT_TESTS_REENTRANCY_ENDPOINTS_H */
