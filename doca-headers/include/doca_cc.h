/*
 * dpakit soft device: DOCA Comm Channel under its DOCA 2.5 names (doca_cc_*).
 *
 * DOCA 2.7 renamed the context-based Comm Channel to Comch (doca_comch.h). This header keeps
 * the 2.5 names of its control path, so programs written for DOCA 2.5 build unchanged: every
 * function here is a thin wrapper (emu/csrc/cc.c) over the Comch function of the same role, and
 * the soft device serves it with its Comch implementation. The objects are the Comch objects
 * under their 2.5 names. As in DOCA 2.5, every function is experimental: define
 * DOCA_ALLOW_EXPERIMENTAL_API to use them without warnings.
 */
#ifndef DOCA_CC_H
#define DOCA_CC_H

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

/* The Comch objects under their 2.5 names (doca_comch_connection, doca_comch_server, ...). */
struct doca_cc_connection;
struct doca_cc_server;
struct doca_cc_client;
struct doca_cc_task_send;
struct doca_cc_event_msg_recv;
struct doca_cc_event_connection_status_changed;
struct doca_cc_event_consumer;

/* Connection statistics (doca_cc_connection_get_counter); the values of enum doca_comch_counter. */
enum doca_cc_counter {
	DOCA_CC_COUNTER_SENT_MESSAGES = 1,
	DOCA_CC_COUNTER_SENT_BYTES = 2,
	DOCA_CC_COUNTER_RECV_MESSAGES = 3,
	DOCA_CC_COUNTER_RECV_BYTES = 4,
};

/* A send task finished (the same shape serves success and error). */
typedef void (*doca_cc_task_send_completion_cb_t)(struct doca_cc_task_send *task,
						  union doca_data task_user_data,
						  union doca_data ctx_user_data);

/* A message arrived; recv_buffer is valid only until the callback returns. */
typedef void (*doca_cc_event_msg_recv_cb_t)(struct doca_cc_event_msg_recv *event,
					    uint8_t *recv_buffer,
					    uint32_t msg_len,
					    struct doca_cc_connection *cc_connection);

/* A client connected to or disconnected from a server; change_successful is 1 or 0. */
typedef void (*doca_cc_event_connection_status_changed_cb_t)(
	struct doca_cc_event_connection_status_changed *event,
	struct doca_cc_connection *cc_connection,
	uint8_t change_successful);

/* The peer created or destroyed a fast-path consumer with this id on the connection. */
typedef void (*doca_cc_event_consumer_cb_t)(struct doca_cc_event_consumer *event,
					    struct doca_cc_connection *cc_connection,
					    uint32_t id);

/* Capabilities of a device. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_server_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_client_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_name_len(const struct doca_devinfo *devinfo,
							  uint32_t *max_name_len);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
								 uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_clients(const struct doca_devinfo *devinfo,
							 uint32_t *num_clients);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_send_tasks(const struct doca_devinfo *devinfo,
							    uint32_t *max_send_tasks);

/* Server (BlueField Arm side): listens under a name on a device and a representor. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_create(struct doca_dev *dev,
						   struct doca_dev_rep *repr,
						   const char *name,
						   struct doca_cc_server **cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_destroy(struct doca_cc_server *cc_server);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_server_as_ctx(struct doca_cc_server *cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_max_msg_size(struct doca_cc_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_max_msg_size(const struct doca_cc_server *cc_server,
							     uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_recv_queue_size(struct doca_cc_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_recv_queue_size(const struct doca_cc_server *cc_server,
								uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_device(const struct doca_cc_server *cc_server,
						       struct doca_dev **dev);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_device_repr(const struct doca_cc_server *cc_server,
							    struct doca_dev_rep **repr);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_task_send_set_conf(struct doca_cc_server *cc_server,
							       doca_cc_task_send_completion_cb_t task_completion_cb,
							       doca_cc_task_send_completion_cb_t task_error_cb,
							       uint32_t num_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_task_send_alloc_init(struct doca_cc_server *cc_server,
								 struct doca_cc_connection *peer,
								 const void *msg,
								 uint32_t len,
								 struct doca_cc_task_send **task);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_msg_recv_register(struct doca_cc_server *cc_server,
								    doca_cc_event_msg_recv_cb_t recv_event_cb);
/* Comch: doca_comch_server_event_connection_status_changed_register. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_connection_register(
	struct doca_cc_server *cc_server,
	doca_cc_event_connection_status_changed_cb_t connect_event_cb,
	doca_cc_event_connection_status_changed_cb_t disconnect_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_consumer_register(struct doca_cc_server *cc_server,
								    doca_cc_event_consumer_cb_t new_consumer_event_cb,
								    doca_cc_event_consumer_cb_t expired_consumer_event_cb);

/* Client (host side): connects to the server of a name through its device. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_create(struct doca_dev *dev,
						   const char *name,
						   struct doca_cc_client **cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_destroy(struct doca_cc_client *cc_client);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_client_as_ctx(struct doca_cc_client *cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_max_msg_size(struct doca_cc_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_max_msg_size(const struct doca_cc_client *cc_client,
							     uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_recv_queue_size(struct doca_cc_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_recv_queue_size(const struct doca_cc_client *cc_client,
								uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_device(const struct doca_cc_client *cc_client,
						       struct doca_dev **dev);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_connection(const struct doca_cc_client *cc_client,
							   struct doca_cc_connection **connection);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_task_send_set_conf(struct doca_cc_client *cc_client,
							       doca_cc_task_send_completion_cb_t task_completion_cb,
							       doca_cc_task_send_completion_cb_t task_error_cb,
							       uint32_t num_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_task_send_alloc_init(struct doca_cc_client *cc_client,
								 struct doca_cc_connection *peer,
								 const void *msg,
								 uint32_t len,
								 struct doca_cc_task_send **task);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_event_msg_recv_register(struct doca_cc_client *cc_client,
								    doca_cc_event_msg_recv_cb_t recv_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_event_consumer_register(struct doca_cc_client *cc_client,
								    doca_cc_event_consumer_cb_t new_consumer_event_cb,
								    doca_cc_event_consumer_cb_t expired_consumer_event_cb);

/* Send task. */
DOCA_EXPERIMENTAL struct doca_task *doca_cc_task_send_as_task(struct doca_cc_task_send *task);

/* Connection. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_set_user_data(struct doca_cc_connection *connection,
							      union doca_data user_data);
DOCA_EXPERIMENTAL union doca_data doca_cc_connection_get_user_data(const struct doca_cc_connection *connection);
DOCA_EXPERIMENTAL struct doca_cc_server *doca_cc_server_get_server_ctx(const struct doca_cc_connection *connection);
DOCA_EXPERIMENTAL struct doca_cc_client *doca_cc_client_get_client_ctx(const struct doca_cc_connection *connection);
DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_update_info(struct doca_cc_connection *cc_connection);
DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_get_counter(const struct doca_cc_connection *cc_connection,
							    enum doca_cc_counter counter_type,
							    uint64_t *counter_value);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_CC_H */
