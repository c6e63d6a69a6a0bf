/*
 * dpakit soft device: DOCA Comch, the communication channel between host, Arm and DPA.
 *
 * This header holds the control path: a server on the Arm side, clients on the host side, the
 * connection between them, send tasks and events. The fast path on a connection and the queues
 * between the CPU and the DPA are in doca_comch_consumer.h, doca_comch_producer.h and
 * doca_comch_msgq.h.
 */
#ifndef DOCA_COMCH_H
#define DOCA_COMCH_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>
#include <doca_dev.h>
#include <doca_ctx.h>
#include <doca_pe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A connection between a Comch client and server. */
struct doca_comch_connection;
struct doca_comch_server;
struct doca_comch_client;
struct doca_comch_task_send;
struct doca_comch_event_msg_recv;
struct doca_comch_event_connection_status_changed;
struct doca_comch_event_consumer;

/* Connection statistics (doca_comch_connection_get_counter). */
enum doca_comch_counter {
	DOCA_COMCH_COUNTER_SENT_MESSAGES = 1,
	DOCA_COMCH_COUNTER_SENT_BYTES = 2,
	DOCA_COMCH_COUNTER_RECV_MESSAGES = 3,
	DOCA_COMCH_COUNTER_RECV_BYTES = 4,
};

/* A send task finished (the same shape serves success and error). */
typedef void (*doca_comch_task_send_completion_cb_t)(struct doca_comch_task_send *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);

/* A message arrived; recv_buffer is valid only until the callback returns. */
typedef void (*doca_comch_event_msg_recv_cb_t)(struct doca_comch_event_msg_recv *event,
					       uint8_t *recv_buffer,
					       uint32_t msg_len,
					       struct doca_comch_connection *comch_connection);

/* A client connected to or disconnected from a server; change_successful is 1 or 0. */
typedef void (*doca_comch_event_connection_status_changed_cb_t)(
	struct doca_comch_event_connection_status_changed *event,
	struct doca_comch_connection *comch_connection,
	uint8_t change_successful);

/* The peer created or destroyed a fast-path consumer with this id on the connection. */
typedef void (*doca_comch_event_consumer_cb_t)(struct doca_comch_event_consumer *event,
					       struct doca_comch_connection *comch_connection,
					       uint32_t id);

/* Capabilities of a device. */
DOCA_STABLE doca_error_t doca_comch_cap_server_is_supported(const struct doca_devinfo *devinfo);
DOCA_STABLE doca_error_t doca_comch_cap_client_is_supported(const struct doca_devinfo *devinfo);
DOCA_STABLE doca_error_t doca_comch_cap_get_max_name_len(const struct doca_devinfo *devinfo,
							 uint32_t *max_name_len);
DOCA_STABLE doca_error_t doca_comch_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
								uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_cap_get_max_clients(const struct doca_devinfo *devinfo,
							uint32_t *num_clients);
DOCA_STABLE doca_error_t doca_comch_cap_get_max_send_tasks(const struct doca_devinfo *devinfo,
							   uint32_t *max_send_tasks);

/* Server (BlueField Arm side): listens under a name on a device and a representor. */
DOCA_STABLE doca_error_t doca_comch_server_create(struct doca_dev *dev,
						  struct doca_dev_rep *repr,
						  const char *name,
						  struct doca_comch_server **comch_server);
DOCA_STABLE doca_error_t doca_comch_server_destroy(struct doca_comch_server *comch_server);
DOCA_STABLE struct doca_ctx *doca_comch_server_as_ctx(struct doca_comch_server *comch_server);
DOCA_STABLE doca_error_t doca_comch_server_set_max_msg_size(struct doca_comch_server *comch_server, uint32_t size);
DOCA_STABLE doca_error_t doca_comch_server_get_max_msg_size(const struct doca_comch_server *comch_server,
							    uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_server_set_recv_queue_size(struct doca_comch_server *comch_server,
							       uint32_t size);
DOCA_STABLE doca_error_t doca_comch_server_get_recv_queue_size(const struct doca_comch_server *comch_server,
							       uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_server_get_device(const struct doca_comch_server *comch_server,
						      struct doca_dev **dev);
DOCA_STABLE doca_error_t doca_comch_server_get_device_rep(const struct doca_comch_server *comch_server,
							  struct doca_dev_rep **rep);
DOCA_STABLE doca_error_t doca_comch_server_task_send_set_conf(struct doca_comch_server *comch_server,
							      doca_comch_task_send_completion_cb_t task_completion_cb,
							      doca_comch_task_send_completion_cb_t task_error_cb,
							      uint32_t num_send_tasks);
DOCA_STABLE doca_error_t doca_comch_server_task_send_alloc_init(struct doca_comch_server *comch_server,
								struct doca_comch_connection *peer,
								const void *msg,
								uint32_t len,
								struct doca_comch_task_send **task);
DOCA_STABLE doca_error_t doca_comch_server_event_msg_recv_register(struct doca_comch_server *comch_server,
								   doca_comch_event_msg_recv_cb_t recv_event_cb);
DOCA_STABLE doca_error_t doca_comch_server_event_connection_status_changed_register(
	struct doca_comch_server *comch_server,
	doca_comch_event_connection_status_changed_cb_t connect_event_cb,
	doca_comch_event_connection_status_changed_cb_t disconnect_event_cb);
DOCA_STABLE doca_error_t doca_comch_server_event_consumer_register(struct doca_comch_server *comch_server,
								   doca_comch_event_consumer_cb_t new_consumer_event_cb,
								   doca_comch_event_consumer_cb_t expired_consumer_event_cb);
DOCA_STABLE doca_error_t doca_comch_server_disconnect(struct doca_comch_server *comch_server,
						      struct doca_comch_connection *connection);

/* DOCA 2.7 names of the two functions renamed in 2.8, for programs written against 2.7. */
DOCA_DEPRECATED doca_error_t doca_comch_server_event_connection_register(
	struct doca_comch_server *comch_server,
	doca_comch_event_connection_status_changed_cb_t connect_event_cb,
	doca_comch_event_connection_status_changed_cb_t disconnect_event_cb);
DOCA_DEPRECATED doca_error_t doca_comch_server_get_device_repr(const struct doca_comch_server *comch_server,
							       struct doca_dev_rep **repr);

/* Client (host side): connects to the server of a name through its device. */
DOCA_STABLE doca_error_t doca_comch_client_create(struct doca_dev *dev,
						  const char *name,
						  struct doca_comch_client **comch_client);
DOCA_STABLE doca_error_t doca_comch_client_destroy(struct doca_comch_client *comch_client);
DOCA_STABLE struct doca_ctx *doca_comch_client_as_ctx(struct doca_comch_client *comch_client);
DOCA_STABLE doca_error_t doca_comch_client_set_max_msg_size(struct doca_comch_client *comch_client, uint32_t size);
DOCA_STABLE doca_error_t doca_comch_client_get_max_msg_size(const struct doca_comch_client *comch_client,
							    uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_client_set_recv_queue_size(struct doca_comch_client *comch_client,
							       uint32_t size);
DOCA_STABLE doca_error_t doca_comch_client_get_recv_queue_size(const struct doca_comch_client *comch_client,
							       uint32_t *size);
DOCA_STABLE doca_error_t doca_comch_client_get_device(const struct doca_comch_client *comch_client,
						      struct doca_dev **dev);
DOCA_STABLE doca_error_t doca_comch_client_get_connection(const struct doca_comch_client *comch_client,
							  struct doca_comch_connection **connection);
DOCA_STABLE doca_error_t doca_comch_client_task_send_set_conf(struct doca_comch_client *comch_client,
							      doca_comch_task_send_completion_cb_t task_completion_cb,
							      doca_comch_task_send_completion_cb_t task_error_cb,
							      uint32_t num_send_tasks);
DOCA_STABLE doca_error_t doca_comch_client_task_send_alloc_init(struct doca_comch_client *comch_client,
								struct doca_comch_connection *peer,
								const void *msg,
								uint32_t len,
								struct doca_comch_task_send **task);
DOCA_STABLE doca_error_t doca_comch_client_event_msg_recv_register(struct doca_comch_client *comch_client,
								   doca_comch_event_msg_recv_cb_t recv_event_cb);
DOCA_STABLE doca_error_t doca_comch_client_event_consumer_register(struct doca_comch_client *comch_client,
								   doca_comch_event_consumer_cb_t new_consumer_event_cb,
								   doca_comch_event_consumer_cb_t expired_consumer_event_cb);

/* Send task. */
DOCA_STABLE struct doca_task *doca_comch_task_send_as_task(struct doca_comch_task_send *task);

/* Connection. */
DOCA_STABLE doca_error_t doca_comch_connection_set_user_data(struct doca_comch_connection *connection,
							     union doca_data user_data);
DOCA_STABLE union doca_data doca_comch_connection_get_user_data(const struct doca_comch_connection *connection);
DOCA_STABLE struct doca_comch_server *doca_comch_server_get_server_ctx(const struct doca_comch_connection *connection);
DOCA_STABLE struct doca_comch_client *doca_comch_client_get_client_ctx(const struct doca_comch_connection *connection);
DOCA_STABLE doca_error_t doca_comch_connection_update_info(struct doca_comch_connection *comch_connection);
DOCA_STABLE doca_error_t doca_comch_connection_get_counter(const struct doca_comch_connection *comch_connection,
							   enum doca_comch_counter counter_type,
							   uint64_t *counter_value);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMCH_H */
