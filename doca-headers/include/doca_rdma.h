/*
 * dpakit soft device: RDMA, declared only.
 *
 * The soft device does not model RDMA. These declarations let programs whose shared helper
 * files use it compile and link: creating an RDMA context or shared receive queue answers
 * DOCA_ERROR_NOT_SUPPORTED, capability queries answer that it is not supported, and every other
 * call refuses its handle (none can exist).
 */
#ifndef DOCA_RDMA_H
#define DOCA_RDMA_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_ctx;
struct doca_dev;
struct doca_devinfo;

struct doca_rdma;
struct doca_rdma_connection;
struct doca_rdma_srq;

/* Transport of an RDMA context. */
enum doca_rdma_transport_type {
	DOCA_RDMA_TRANSPORT_TYPE_RC = 0,
	DOCA_RDMA_TRANSPORT_TYPE_DC = 1,
};

/* Layout of a shared receive queue. */
enum doca_rdma_srq_type {
	DOCA_RDMA_SRQ_TYPE_LINKED_LIST = 0,
	DOCA_RDMA_SRQ_TYPE_CYCLIC = 1,
};

/* Contexts. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_create(struct doca_dev *dev, struct doca_rdma **rdma);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_create_with_srq(struct doca_dev *dev, struct doca_rdma_srq *rdma_srq,
				       struct doca_rdma **rdma);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_destroy(struct doca_rdma *rdma);

DOCA_EXPERIMENTAL
struct doca_ctx *doca_rdma_as_ctx(struct doca_rdma *rdma);

/* Connection setup by exchanged details. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_export(struct doca_rdma *rdma, const void **local_rdma_conn_details,
			      size_t *local_rdma_conn_details_size,
			      struct doca_rdma_connection **rdma_connection);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_connect(struct doca_rdma *rdma, const void *remote_rdma_conn_details,
			       size_t remote_rdma_conn_details_size,
			       struct doca_rdma_connection *rdma_connection);

/* Configuration, before start. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_permissions(struct doca_rdma *rdma, uint32_t permissions);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_grh_enabled(struct doca_rdma *rdma, uint8_t grh_enabled);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_gid_index(struct doca_rdma *rdma, uint32_t gid_index);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_send_queue_size(struct doca_rdma *rdma, uint32_t send_queue_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_recv_queue_size(struct doca_rdma *rdma, uint32_t recv_queue_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_transport_type(struct doca_rdma *rdma,
					  enum doca_rdma_transport_type transport_type);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_set_max_num_connections(struct doca_rdma *rdma,
					       uint16_t max_num_connections);

/* The handle DPA kernels use (an RDMA context whose datapath is on the DPA). */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_get_dpa_handle(struct doca_rdma *rdma, doca_dpa_dev_rdma_t *dpa_rdma);

/* The DPA completion context an RDMA context with its datapath on the DPA reports to. */
struct doca_dpa_completion;

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_dpa_completion_attach(struct doca_rdma *rdma,
					     struct doca_dpa_completion *dpa_comp);

/* Receive tasks: how many buffers one receive may scatter into (before start). */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_task_receive_set_dst_buf_list_len(struct doca_rdma *rdma,
							  uint32_t buf_list_len);

/* Connections: the identifier DPA completions report for a connection. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_connection_get_id(const struct doca_rdma_connection *rdma_connection,
					 uint32_t *connection_id);

/* Capabilities: not supported by the soft device. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
						   uint32_t *max_recv_queue_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_get_max_send_queue_size(const struct doca_devinfo *devinfo,
						   uint32_t *max_send_queue_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_get_max_message_size(const struct doca_devinfo *devinfo,
						uint32_t *max_message_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_transport_type_is_supported(const struct doca_devinfo *devinfo,
						       enum doca_rdma_transport_type transport_type);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_task_receive_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_task_send_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_task_send_imm_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_task_read_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_cap_task_write_is_supported(const struct doca_devinfo *devinfo);

/* Shared receive queues. */
DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_create(struct doca_dev *dev, struct doca_rdma_srq **rdma_srq);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_destroy(struct doca_rdma_srq *rdma_srq);

DOCA_EXPERIMENTAL
struct doca_ctx *doca_rdma_srq_as_ctx(struct doca_rdma_srq *rdma_srq);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_set_shared_recv_queue_size(struct doca_rdma_srq *rdma_srq,
						      uint32_t shared_recv_queue_size);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_task_receive_set_dst_buf_list_len(struct doca_rdma_srq *rdma_srq,
							     uint32_t buf_list_len);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_set_type(struct doca_rdma_srq *rdma_srq, enum doca_rdma_srq_type srq_type);

DOCA_EXPERIMENTAL
doca_error_t doca_rdma_srq_get_dpa_handle(struct doca_rdma_srq *rdma_srq,
					  doca_dpa_dev_rdma_srq_t *dpa_rdma_srq);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_RDMA_H */
