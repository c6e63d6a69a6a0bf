/*
 * dpakit soft device: the legacy DOCA Comm Channel endpoint API (DOCA 1.2 to 2.8).
 *
 * A service endpoint listens on the BlueField Arm side under a name, for the host function
 * of a representor; a client endpoint on that host function connects to it. Messages go with
 * sendto/recvfrom; a peer address stands for one connection. Endpoints made with
 * doca_comm_channel_ep_create(&ep) answer DOCA_ERROR_AGAIN where they would wait; the DOCA 1.2
 * form doca_comm_channel_ep_create(&attr, &ep) makes a blocking endpoint unless attr.flags
 * has DOCA_CC_INIT_FLAG_NONBLOCK (a call may still pass DOCA_CC_MSG_FLAG_DONTWAIT). Both forms
 * compile: the call's argument count picks the function.
 *
 * Every function is experimental, as in DOCA: define DOCA_ALLOW_EXPERIMENTAL_API.
 */
#ifndef DOCA_COMM_CHANNEL_H
#define DOCA_COMM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>
#include <doca_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An endpoint: a service, or a client's end of one connection. */
struct doca_comm_channel_ep_t;
/* A peer address: one connection of an endpoint. */
struct doca_comm_channel_addr_t;

/* A pollable descriptor (send room, received messages). */
typedef doca_event_handle_t doca_event_channel_t;

/* Flags of sendto and recvfrom. DONTWAIT (DOCA 1.2) answers DOCA_ERROR_AGAIN instead of
 * waiting on a blocking endpoint. */
enum doca_comm_channel_msg_flags {
	DOCA_CC_MSG_FLAG_NONE = 0,
	DOCA_CC_MSG_FLAG_DONTWAIT = 1,
};

/* Flags of struct doca_comm_channel_init_attr (DOCA 1.2). */
enum doca_comm_channel_init_flags {
	DOCA_CC_INIT_FLAG_NONBLOCK = 1,
};
#define DOCA_COMM_CHANNEL_INIT_FLAG_NONBLOCK DOCA_CC_INIT_FLAG_NONBLOCK

/* The attributes of an endpoint in the DOCA 1.2 form of doca_comm_channel_ep_create:
 * maxmsgs sets both queue sizes, msgsize the largest message; cookie is kept. */
struct doca_comm_channel_init_attr {
	uint32_t cookie;
	uint32_t flags;
	uint32_t maxmsgs;
	uint32_t msgsize;
};

/* Device limits. */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_get_max_service_name_len(uint32_t *max_service_name_len);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_get_max_message_size(struct doca_devinfo *devinfo,
						    uint32_t *max_message_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_get_max_send_queue_size(struct doca_devinfo *devinfo,
						       uint32_t *max_send_queue_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_get_max_recv_queue_size(struct doca_devinfo *devinfo,
						       uint32_t *max_recv_queue_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_get_service_max_num_connections(struct doca_devinfo *devinfo,
							       uint32_t *max_num_connections);

/* Endpoints. */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_create(struct doca_comm_channel_ep_t **ep);
DOCA_EXPERIMENTAL
doca_error_t dpakit_soft_comm_channel_ep_create_attr(struct doca_comm_channel_init_attr *attr,
						     struct doca_comm_channel_ep_t **ep);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_destroy(struct doca_comm_channel_ep_t *local_ep);

DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_set_device(struct doca_comm_channel_ep_t *ep,
					     struct doca_dev *device);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_set_device_rep(struct doca_comm_channel_ep_t *ep,
						 struct doca_dev_rep *device_rep);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_set_max_msg_size(struct doca_comm_channel_ep_t *ep,
						   uint16_t max_msg_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_set_send_queue_size(struct doca_comm_channel_ep_t *ep,
						      uint16_t send_queue_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_set_recv_queue_size(struct doca_comm_channel_ep_t *ep,
						      uint16_t recv_queue_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_device(struct doca_comm_channel_ep_t *ep,
					     struct doca_dev **device);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_device_rep(struct doca_comm_channel_ep_t *ep,
						 struct doca_dev_rep **device_rep);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_max_msg_size(struct doca_comm_channel_ep_t *ep,
						   uint16_t *max_msg_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_send_queue_size(struct doca_comm_channel_ep_t *ep,
						      uint16_t *send_queue_size);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_recv_queue_size(struct doca_comm_channel_ep_t *ep,
						      uint16_t *recv_queue_size);

/* Connections. */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_listen(struct doca_comm_channel_ep_t *local_ep, const char *name);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_connect(struct doca_comm_channel_ep_t *local_ep,
					  const char *name,
					  struct doca_comm_channel_addr_t **peer_addr);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_sendto(struct doca_comm_channel_ep_t *local_ep,
					 const void *msg,
					 size_t len,
					 int flags,
					 struct doca_comm_channel_addr_t *peer_addr);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_recvfrom(struct doca_comm_channel_ep_t *local_ep,
					   void *msg,
					   size_t *len,
					   int flags,
					   struct doca_comm_channel_addr_t **peer_addr);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_disconnect(struct doca_comm_channel_ep_t *local_ep,
					     struct doca_comm_channel_addr_t *peer_addr);

/* Service state (service endpoints). */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_update_service_state_info(struct doca_comm_channel_ep_t *local_ep);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_peer_addr_list(const struct doca_comm_channel_ep_t *local_ep,
						     struct doca_comm_channel_addr_t ***peer_addr_array,
						     uint32_t *peer_addr_array_len);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_pending_connections(const struct doca_comm_channel_ep_t *local_ep,
							  uint32_t *pending_connections);

/* Event channels: pollable descriptors, owned by the endpoint. Arm before each wait. */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_event_channel(struct doca_comm_channel_ep_t *local_ep,
						    doca_event_channel_t *send_event_channel,
						    doca_event_channel_t *recv_event_channel);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_get_service_event_channel(struct doca_comm_channel_ep_t *local_ep,
							    doca_event_channel_t *service_event_channel);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_event_handle_arm_send(struct doca_comm_channel_ep_t *local_ep);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_ep_event_handle_arm_recv(struct doca_comm_channel_ep_t *local_ep);

/* Peer addresses: user data and statistics (as of the last update_info). */
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_update_info(struct doca_comm_channel_addr_t *peer_addr);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_set_user_data(struct doca_comm_channel_addr_t *peer_addr,
						       uint64_t user_context);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_user_data(struct doca_comm_channel_addr_t *peer_addr,
						       uint64_t *user_data);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_send_messages(const struct doca_comm_channel_addr_t *peer_addr,
							   uint64_t *send_messages);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_send_bytes(const struct doca_comm_channel_addr_t *peer_addr,
							uint64_t *send_bytes);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_recv_messages(const struct doca_comm_channel_addr_t *peer_addr,
							   uint64_t *recv_messages);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_recv_bytes(const struct doca_comm_channel_addr_t *peer_addr,
							uint64_t *recv_bytes);
DOCA_EXPERIMENTAL
doca_error_t doca_comm_channel_peer_addr_get_send_in_flight_messages(
	const struct doca_comm_channel_addr_t *peer_addr,
	uint64_t *send_in_flight_messages);

/* The DOCA 1.2/1.3 names of the user-data calls. */
DOCA_DEPRECATED
doca_error_t doca_comm_channel_peer_addr_user_data_set(struct doca_comm_channel_addr_t *peer_addr,
						       uint64_t user_context);
DOCA_DEPRECATED
doca_error_t doca_comm_channel_peer_addr_user_data_get(struct doca_comm_channel_addr_t *peer_addr,
						       uint64_t *user_data);

/*
 * doca_comm_channel_ep_create(&ep) (DOCA 1.4 and later) or doca_comm_channel_ep_create(&attr,
 * &ep) (DOCA 1.2/1.3): the number of arguments picks the function. Taking the function's
 * address is unaffected.
 */
#define DOCA_COMM_CHANNEL_EP_CREATE_PICK(_1, _2, NAME, ...) NAME
#define doca_comm_channel_ep_create(...)                                                           \
	DOCA_COMM_CHANNEL_EP_CREATE_PICK(__VA_ARGS__, dpakit_soft_comm_channel_ep_create_attr,     \
					 doca_comm_channel_ep_create, )(__VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMM_CHANNEL_H */
