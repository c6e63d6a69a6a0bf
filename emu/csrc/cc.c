/*
 * The DOCA 2.5 names of the Comch functions (doca_cc.h, doca_cc_consumer.h, doca_cc_producer.h):
 * one wrapper per function, calling the Comch function of the same role. The doca_cc_* objects
 * are the doca_comch_* objects under other names, so the wrappers only cast pointers. Both sets
 * of headers are included: the compiler checks each wrapper against the 2.5 declaration it
 * defines and the Comch declaration it calls.
 */
#ifndef DOCA_ALLOW_EXPERIMENTAL_API /* build.rs defines it for every file */
#define DOCA_ALLOW_EXPERIMENTAL_API
#endif

#include <stddef.h>
#include <stdint.h>

#include <doca_cc.h>
#include <doca_cc_consumer.h>
#include <doca_cc_producer.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_producer.h>

/*
 * Callbacks are passed through as they are: a doca_cc_*_cb_t and its doca_comch_*_cb_t differ
 * only in the struct their pointer parameters point to, so the two function pointer types have
 * the same ABI, and the Comch implementation calls the program's function with the very
 * objects the program knows under the 2.5 names. The casts below say so explicitly.
 */

/* ---- Capabilities (doca_cc.h) ---- */

doca_error_t doca_cc_cap_server_is_supported(const struct doca_devinfo *devinfo)
{
	return doca_comch_cap_server_is_supported(devinfo);
}

doca_error_t doca_cc_cap_client_is_supported(const struct doca_devinfo *devinfo)
{
	return doca_comch_cap_client_is_supported(devinfo);
}

doca_error_t doca_cc_cap_get_max_name_len(const struct doca_devinfo *devinfo, uint32_t *max_name_len)
{
	return doca_comch_cap_get_max_name_len(devinfo, max_name_len);
}

doca_error_t doca_cc_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *size)
{
	return doca_comch_cap_get_max_msg_size(devinfo, size);
}

doca_error_t doca_cc_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo, uint32_t *size)
{
	return doca_comch_cap_get_max_recv_queue_size(devinfo, size);
}

doca_error_t doca_cc_cap_get_max_clients(const struct doca_devinfo *devinfo, uint32_t *num_clients)
{
	return doca_comch_cap_get_max_clients(devinfo, num_clients);
}

doca_error_t doca_cc_cap_get_max_send_tasks(const struct doca_devinfo *devinfo, uint32_t *max_send_tasks)
{
	return doca_comch_cap_get_max_send_tasks(devinfo, max_send_tasks);
}

/* ---- Server ---- */

doca_error_t doca_cc_server_create(struct doca_dev *dev, struct doca_dev_rep *repr, const char *name,
				   struct doca_cc_server **cc_server)
{
	return doca_comch_server_create(dev, repr, name, (struct doca_comch_server **)cc_server);
}

doca_error_t doca_cc_server_destroy(struct doca_cc_server *cc_server)
{
	return doca_comch_server_destroy((struct doca_comch_server *)cc_server);
}

struct doca_ctx *doca_cc_server_as_ctx(struct doca_cc_server *cc_server)
{
	return doca_comch_server_as_ctx((struct doca_comch_server *)cc_server);
}

doca_error_t doca_cc_server_set_max_msg_size(struct doca_cc_server *cc_server, uint32_t size)
{
	return doca_comch_server_set_max_msg_size((struct doca_comch_server *)cc_server, size);
}

doca_error_t doca_cc_server_get_max_msg_size(const struct doca_cc_server *cc_server, uint32_t *size)
{
	return doca_comch_server_get_max_msg_size((const struct doca_comch_server *)cc_server, size);
}

doca_error_t doca_cc_server_set_recv_queue_size(struct doca_cc_server *cc_server, uint32_t size)
{
	return doca_comch_server_set_recv_queue_size((struct doca_comch_server *)cc_server, size);
}

doca_error_t doca_cc_server_get_recv_queue_size(const struct doca_cc_server *cc_server, uint32_t *size)
{
	return doca_comch_server_get_recv_queue_size((const struct doca_comch_server *)cc_server, size);
}

doca_error_t doca_cc_server_get_device(const struct doca_cc_server *cc_server, struct doca_dev **dev)
{
	return doca_comch_server_get_device((const struct doca_comch_server *)cc_server, dev);
}

doca_error_t doca_cc_server_get_device_repr(const struct doca_cc_server *cc_server, struct doca_dev_rep **repr)
{
	return doca_comch_server_get_device_rep((const struct doca_comch_server *)cc_server, repr);
}

doca_error_t doca_cc_server_task_send_set_conf(struct doca_cc_server *cc_server,
					       doca_cc_task_send_completion_cb_t task_completion_cb,
					       doca_cc_task_send_completion_cb_t task_error_cb,
					       uint32_t num_send_tasks)
{
	return doca_comch_server_task_send_set_conf((struct doca_comch_server *)cc_server,
						    (doca_comch_task_send_completion_cb_t)task_completion_cb,
						    (doca_comch_task_send_completion_cb_t)task_error_cb,
						    num_send_tasks);
}

doca_error_t doca_cc_server_task_send_alloc_init(struct doca_cc_server *cc_server, struct doca_cc_connection *peer,
						 const void *msg, uint32_t len, struct doca_cc_task_send **task)
{
	return doca_comch_server_task_send_alloc_init((struct doca_comch_server *)cc_server,
						      (struct doca_comch_connection *)peer, msg, len,
						      (struct doca_comch_task_send **)task);
}

doca_error_t doca_cc_server_event_msg_recv_register(struct doca_cc_server *cc_server,
						    doca_cc_event_msg_recv_cb_t recv_event_cb)
{
	return doca_comch_server_event_msg_recv_register((struct doca_comch_server *)cc_server,
							 (doca_comch_event_msg_recv_cb_t)recv_event_cb);
}

doca_error_t doca_cc_server_event_connection_register(struct doca_cc_server *cc_server,
						      doca_cc_event_connection_status_changed_cb_t connect_event_cb,
						      doca_cc_event_connection_status_changed_cb_t disconnect_event_cb)
{
	return doca_comch_server_event_connection_status_changed_register(
		(struct doca_comch_server *)cc_server,
		(doca_comch_event_connection_status_changed_cb_t)connect_event_cb,
		(doca_comch_event_connection_status_changed_cb_t)disconnect_event_cb);
}

doca_error_t doca_cc_server_event_consumer_register(struct doca_cc_server *cc_server,
						    doca_cc_event_consumer_cb_t new_consumer_event_cb,
						    doca_cc_event_consumer_cb_t expired_consumer_event_cb)
{
	return doca_comch_server_event_consumer_register((struct doca_comch_server *)cc_server,
							 (doca_comch_event_consumer_cb_t)new_consumer_event_cb,
							 (doca_comch_event_consumer_cb_t)expired_consumer_event_cb);
}

/* ---- Client ---- */

doca_error_t doca_cc_client_create(struct doca_dev *dev, const char *name, struct doca_cc_client **cc_client)
{
	return doca_comch_client_create(dev, name, (struct doca_comch_client **)cc_client);
}

doca_error_t doca_cc_client_destroy(struct doca_cc_client *cc_client)
{
	return doca_comch_client_destroy((struct doca_comch_client *)cc_client);
}

struct doca_ctx *doca_cc_client_as_ctx(struct doca_cc_client *cc_client)
{
	return doca_comch_client_as_ctx((struct doca_comch_client *)cc_client);
}

doca_error_t doca_cc_client_set_max_msg_size(struct doca_cc_client *cc_client, uint32_t size)
{
	return doca_comch_client_set_max_msg_size((struct doca_comch_client *)cc_client, size);
}

doca_error_t doca_cc_client_get_max_msg_size(const struct doca_cc_client *cc_client, uint32_t *size)
{
	return doca_comch_client_get_max_msg_size((const struct doca_comch_client *)cc_client, size);
}

doca_error_t doca_cc_client_set_recv_queue_size(struct doca_cc_client *cc_client, uint32_t size)
{
	return doca_comch_client_set_recv_queue_size((struct doca_comch_client *)cc_client, size);
}

doca_error_t doca_cc_client_get_recv_queue_size(const struct doca_cc_client *cc_client, uint32_t *size)
{
	return doca_comch_client_get_recv_queue_size((const struct doca_comch_client *)cc_client, size);
}

doca_error_t doca_cc_client_get_device(const struct doca_cc_client *cc_client, struct doca_dev **dev)
{
	return doca_comch_client_get_device((const struct doca_comch_client *)cc_client, dev);
}

doca_error_t doca_cc_client_get_connection(const struct doca_cc_client *cc_client,
					   struct doca_cc_connection **connection)
{
	return doca_comch_client_get_connection((const struct doca_comch_client *)cc_client,
						(struct doca_comch_connection **)connection);
}

doca_error_t doca_cc_client_task_send_set_conf(struct doca_cc_client *cc_client,
					       doca_cc_task_send_completion_cb_t task_completion_cb,
					       doca_cc_task_send_completion_cb_t task_error_cb,
					       uint32_t num_send_tasks)
{
	return doca_comch_client_task_send_set_conf((struct doca_comch_client *)cc_client,
						    (doca_comch_task_send_completion_cb_t)task_completion_cb,
						    (doca_comch_task_send_completion_cb_t)task_error_cb,
						    num_send_tasks);
}

doca_error_t doca_cc_client_task_send_alloc_init(struct doca_cc_client *cc_client, struct doca_cc_connection *peer,
						 const void *msg, uint32_t len, struct doca_cc_task_send **task)
{
	return doca_comch_client_task_send_alloc_init((struct doca_comch_client *)cc_client,
						      (struct doca_comch_connection *)peer, msg, len,
						      (struct doca_comch_task_send **)task);
}

doca_error_t doca_cc_client_event_msg_recv_register(struct doca_cc_client *cc_client,
						    doca_cc_event_msg_recv_cb_t recv_event_cb)
{
	return doca_comch_client_event_msg_recv_register((struct doca_comch_client *)cc_client,
							 (doca_comch_event_msg_recv_cb_t)recv_event_cb);
}

doca_error_t doca_cc_client_event_consumer_register(struct doca_cc_client *cc_client,
						    doca_cc_event_consumer_cb_t new_consumer_event_cb,
						    doca_cc_event_consumer_cb_t expired_consumer_event_cb)
{
	return doca_comch_client_event_consumer_register((struct doca_comch_client *)cc_client,
							 (doca_comch_event_consumer_cb_t)new_consumer_event_cb,
							 (doca_comch_event_consumer_cb_t)expired_consumer_event_cb);
}

/* ---- Send task and connection ---- */

struct doca_task *doca_cc_task_send_as_task(struct doca_cc_task_send *task)
{
	return doca_comch_task_send_as_task((struct doca_comch_task_send *)task);
}

doca_error_t doca_cc_connection_set_user_data(struct doca_cc_connection *connection, union doca_data user_data)
{
	return doca_comch_connection_set_user_data((struct doca_comch_connection *)connection, user_data);
}

union doca_data doca_cc_connection_get_user_data(const struct doca_cc_connection *connection)
{
	return doca_comch_connection_get_user_data((const struct doca_comch_connection *)connection);
}

struct doca_cc_server *doca_cc_server_get_server_ctx(const struct doca_cc_connection *connection)
{
	return (struct doca_cc_server *)doca_comch_server_get_server_ctx(
		(const struct doca_comch_connection *)connection);
}

struct doca_cc_client *doca_cc_client_get_client_ctx(const struct doca_cc_connection *connection)
{
	return (struct doca_cc_client *)doca_comch_client_get_client_ctx(
		(const struct doca_comch_connection *)connection);
}

doca_error_t doca_cc_connection_update_info(struct doca_cc_connection *cc_connection)
{
	return doca_comch_connection_update_info((struct doca_comch_connection *)cc_connection);
}

doca_error_t doca_cc_connection_get_counter(const struct doca_cc_connection *cc_connection,
					    enum doca_cc_counter counter_type, uint64_t *counter_value)
{
	/* The two enums have the same values; an unknown one reaches Comch as is, to be refused there. */
	return doca_comch_connection_get_counter((const struct doca_comch_connection *)cc_connection,
						 (enum doca_comch_counter)counter_type, counter_value);
}

/* ---- Consumer (doca_cc_consumer.h) ---- */

doca_error_t doca_cc_consumer_create(struct doca_cc_connection *cc_connection, struct doca_mmap *buf_mmap,
				     struct doca_cc_consumer **consumer)
{
	return doca_comch_consumer_create((struct doca_comch_connection *)cc_connection, buf_mmap,
					  (struct doca_comch_consumer **)consumer);
}

doca_error_t doca_cc_consumer_cap_is_supported(const struct doca_devinfo *devinfo)
{
	return doca_comch_consumer_cap_is_supported(devinfo);
}

doca_error_t doca_cc_consumer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo, uint32_t *max_num_tasks)
{
	return doca_comch_consumer_cap_get_max_num_tasks(devinfo, max_num_tasks);
}

doca_error_t doca_cc_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo, uint32_t *max_buf_size)
{
	return doca_comch_consumer_cap_get_max_buf_size(devinfo, max_buf_size);
}

doca_error_t doca_cc_consumer_destroy(struct doca_cc_consumer *consumer)
{
	return doca_comch_consumer_destroy((struct doca_comch_consumer *)consumer);
}

struct doca_ctx *doca_cc_consumer_as_ctx(struct doca_cc_consumer *consumer)
{
	return doca_comch_consumer_as_ctx((struct doca_comch_consumer *)consumer);
}

doca_error_t doca_cc_consumer_get_id(const struct doca_cc_consumer *consumer, uint32_t *id)
{
	return doca_comch_consumer_get_id((const struct doca_comch_consumer *)consumer, id);
}

doca_error_t doca_cc_consumer_task_post_recv_set_conf(struct doca_cc_consumer *consumer,
						      doca_cc_consumer_task_post_recv_completion_cb_t task_completion_cb,
						      doca_cc_consumer_task_post_recv_completion_cb_t task_error_cb,
						      uint32_t num_post_recv_tasks)
{
	return doca_comch_consumer_task_post_recv_set_conf(
		(struct doca_comch_consumer *)consumer,
		(doca_comch_consumer_task_post_recv_completion_cb_t)task_completion_cb,
		(doca_comch_consumer_task_post_recv_completion_cb_t)task_error_cb, num_post_recv_tasks);
}

doca_error_t doca_cc_consumer_task_post_recv_alloc_init(struct doca_cc_consumer *consumer, struct doca_buf *buf,
							struct doca_cc_consumer_task_post_recv **task)
{
	return doca_comch_consumer_task_post_recv_alloc_init((struct doca_comch_consumer *)consumer, buf,
							     (struct doca_comch_consumer_task_post_recv **)task);
}

struct doca_task *doca_cc_consumer_task_post_recv_as_task(struct doca_cc_consumer_task_post_recv *task)
{
	return doca_comch_consumer_task_post_recv_as_task((struct doca_comch_consumer_task_post_recv *)task);
}

struct doca_buf *doca_cc_consumer_task_post_recv_get_buf(const struct doca_cc_consumer_task_post_recv *task)
{
	return doca_comch_consumer_task_post_recv_get_buf((const struct doca_comch_consumer_task_post_recv *)task);
}

uint32_t doca_cc_consumer_task_post_recv_get_producer_id(const struct doca_cc_consumer_task_post_recv *task)
{
	return doca_comch_consumer_task_post_recv_get_producer_id(
		(const struct doca_comch_consumer_task_post_recv *)task);
}

/* ---- Producer (doca_cc_producer.h) ---- */

doca_error_t doca_cc_producer_create(struct doca_cc_connection *cc_connection, struct doca_cc_producer **producer)
{
	return doca_comch_producer_create((struct doca_comch_connection *)cc_connection,
					  (struct doca_comch_producer **)producer);
}

doca_error_t doca_cc_producer_cap_is_supported(const struct doca_devinfo *devinfo)
{
	return doca_comch_producer_cap_is_supported(devinfo);
}

doca_error_t doca_cc_producer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo, uint32_t *max_num_tasks)
{
	return doca_comch_producer_cap_get_max_num_tasks(devinfo, max_num_tasks);
}

doca_error_t doca_cc_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo, uint32_t *max_buf_size)
{
	return doca_comch_producer_cap_get_max_buf_size(devinfo, max_buf_size);
}

doca_error_t doca_cc_producer_destroy(struct doca_cc_producer *producer)
{
	return doca_comch_producer_destroy((struct doca_comch_producer *)producer);
}

struct doca_ctx *doca_cc_producer_as_ctx(struct doca_cc_producer *producer)
{
	return doca_comch_producer_as_ctx((struct doca_comch_producer *)producer);
}

doca_error_t doca_cc_producer_get_id(const struct doca_cc_producer *producer, uint32_t *id)
{
	return doca_comch_producer_get_id((const struct doca_comch_producer *)producer, id);
}

doca_error_t doca_cc_producer_task_send_set_conf(struct doca_cc_producer *producer,
						 doca_cc_producer_task_send_completion_cb_t task_completion_cb,
						 doca_cc_producer_task_send_completion_cb_t task_error_cb,
						 uint32_t num_send_tasks)
{
	return doca_comch_producer_task_send_set_conf((struct doca_comch_producer *)producer,
						      (doca_comch_producer_task_send_completion_cb_t)task_completion_cb,
						      (doca_comch_producer_task_send_completion_cb_t)task_error_cb,
						      num_send_tasks);
}

/* 2.5 sends buffers only: no immediate data. */
doca_error_t doca_cc_producer_task_send_alloc_init(struct doca_cc_producer *producer, struct doca_buf *buf,
						   uint32_t consumer_id, struct doca_cc_producer_task_send **task)
{
	return doca_comch_producer_task_send_alloc_init((struct doca_comch_producer *)producer, buf, NULL, 0,
							consumer_id, (struct doca_comch_producer_task_send **)task);
}

struct doca_task *doca_cc_producer_task_send_as_task(struct doca_cc_producer_task_send *task)
{
	return doca_comch_producer_task_send_as_task((struct doca_comch_producer_task_send *)task);
}

/* The buffer is the program's own (given to alloc_init writable): 2.5 hands it back so. */
struct doca_buf *doca_cc_producer_task_send_get_buf(const struct doca_cc_producer_task_send *task)
{
	return (struct doca_buf *)doca_comch_producer_task_send_get_buf(
		(const struct doca_comch_producer_task_send *)task);
}
