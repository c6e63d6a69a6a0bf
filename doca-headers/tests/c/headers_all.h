/*
 * Shared by headers_all.c and headers_all.cpp: every public header of the soft SDK, and the
 * address of every function the headers-for-real-programs work added. Compiling it with
 * -Wall -Wextra -Werror as C and as C++ checks that the headers are self-contained, declare
 * what programs call, and bring in what programs rely on them for (<string.h>: this file
 * calls strlen without including it).
 */
#include <doca_argp.h>
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_buf_pool.h>
#include <doca_build_config.h>
#include <doca_cc.h>
#include <doca_cc_consumer.h>
#include <doca_cc_producer.h>
#include <doca_clock.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_msgq.h>
#include <doca_comch_producer.h>
#include <doca_comm_channel.h>
#include <doca_compat.h>
#include <doca_config.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dma.h>
#include <doca_dpa.h>
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_comch_msgq.h>
#include <doca_dpa_dev_sync_event.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_pe.h>
#include <doca_rdma.h>
#include <doca_sync_event.h>
#include <doca_types.h>
#include <doca_version.h>
#include <dpakit_soft.h>
#include <dpaintrin.h>

typedef void (*headers_all_fn)(void);

#define HEADERS_ALL_FN(f) ((headers_all_fn)&f)

static headers_all_fn headers_all_functions[] = {
	HEADERS_ALL_FN(doca_version_runtime),
	/* doca_sync_event.h */
	HEADERS_ALL_FN(doca_sync_event_create),
	HEADERS_ALL_FN(doca_sync_event_destroy),
	HEADERS_ALL_FN(doca_sync_event_add_publisher_location_cpu),
	HEADERS_ALL_FN(doca_sync_event_add_publisher_location_dpa),
	HEADERS_ALL_FN(doca_sync_event_add_subscriber_location_cpu),
	HEADERS_ALL_FN(doca_sync_event_add_subscriber_location_dpa),
	HEADERS_ALL_FN(doca_sync_event_add_publisher_location_remote_pci),
	HEADERS_ALL_FN(doca_sync_event_add_subscriber_location_remote_pci),
	HEADERS_ALL_FN(doca_sync_event_add_publisher_location_remote_net),
	HEADERS_ALL_FN(doca_sync_event_set_addr),
	HEADERS_ALL_FN(doca_sync_event_set_doca_buf),
	HEADERS_ALL_FN(doca_sync_event_start),
	HEADERS_ALL_FN(doca_sync_event_stop),
	HEADERS_ALL_FN(doca_sync_event_as_ctx),
	HEADERS_ALL_FN(doca_sync_event_get),
	HEADERS_ALL_FN(doca_sync_event_update_add),
	HEADERS_ALL_FN(doca_sync_event_update_set),
	HEADERS_ALL_FN(doca_sync_event_wait_gt),
	HEADERS_ALL_FN(doca_sync_event_wait_gt_yield),
	HEADERS_ALL_FN(doca_sync_event_wait_eq),
	HEADERS_ALL_FN(doca_sync_event_wait_neq),
	HEADERS_ALL_FN(doca_sync_event_get_dpa_handle),
	HEADERS_ALL_FN(doca_sync_event_cap_is_export_to_dpa_supported),
	HEADERS_ALL_FN(doca_sync_event_export_to_remote_pci),
	HEADERS_ALL_FN(doca_sync_event_create_from_export),
	HEADERS_ALL_FN(doca_sync_event_remote_net_get_dpa_handle),
	HEADERS_ALL_FN(doca_sync_event_task_get_alloc_init),
	HEADERS_ALL_FN(doca_sync_event_task_get_as_doca_task),
	HEADERS_ALL_FN(doca_sync_event_task_get_get_ret_val_ptr),
	HEADERS_ALL_FN(doca_sync_event_task_notify_set_set_set_val),
	HEADERS_ALL_FN(doca_sync_event_task_notify_add_get_fetched_val_ptr),
	HEADERS_ALL_FN(doca_sync_event_task_wait_eq_set_mask),
	HEADERS_ALL_FN(doca_sync_event_task_wait_neq_as_doca_task),
	HEADERS_ALL_FN(doca_sync_event_cap_task_wait_neq_is_supported),
	HEADERS_ALL_FN(doca_sync_event_cap_is_create_from_export_supported),
	/* doca_dpa_dev_sync_event.h */
	HEADERS_ALL_FN(doca_dpa_dev_sync_event_get),
	HEADERS_ALL_FN(doca_dpa_dev_sync_event_update_add),
	HEADERS_ALL_FN(doca_dpa_dev_sync_event_update_set),
	HEADERS_ALL_FN(doca_dpa_dev_sync_event_wait_gt),
	/* doca_dev.h, doca_dpa.h */
	HEADERS_ALL_FN(doca_devinfo_get_pci_addr_str),
	HEADERS_ALL_FN(doca_devinfo_get_ibdev_name),
	HEADERS_ALL_FN(doca_devinfo_rep_get_pci_addr_str),
	HEADERS_ALL_FN(doca_devinfo_rep_get_pci_func_type),
	HEADERS_ALL_FN(doca_devinfo_rep_cap_is_filter_all_supported),
	HEADERS_ALL_FN(doca_devinfo_rep_cap_is_filter_emulated_supported),
	HEADERS_ALL_FN(doca_dpa_eu_affinity_create),
	HEADERS_ALL_FN(doca_dpa_eu_affinity_set),
	HEADERS_ALL_FN(doca_dpa_eu_affinity_destroy),
	HEADERS_ALL_FN(doca_dpa_thread_set_affinity),
	HEADERS_ALL_FN(doca_dpa_get_total_num_eus_available),
	HEADERS_ALL_FN(doca_dpa_set_log_level),
	HEADERS_ALL_FN(doca_dpa_device_extend),
	/* doca_mmap.h, doca_buf.h, doca_buf_inventory.h */
	HEADERS_ALL_FN(doca_mmap_set_max_num_devices),
	HEADERS_ALL_FN(doca_mmap_export_pci),
	HEADERS_ALL_FN(doca_mmap_export_rdma),
	HEADERS_ALL_FN(doca_mmap_create_from_export),
	HEADERS_ALL_FN(doca_mmap_cap_is_export_pci_supported),
	HEADERS_ALL_FN(doca_mmap_cap_is_create_from_export_pci_supported),
	HEADERS_ALL_FN(doca_buf_get_list_len),
	HEADERS_ALL_FN(doca_buf_get_next_in_list),
	HEADERS_ALL_FN(doca_buf_get_last_in_list),
	HEADERS_ALL_FN(doca_buf_is_last_in_list),
	HEADERS_ALL_FN(doca_buf_inventory_stop),
	HEADERS_ALL_FN(doca_buf_inventory_get_num_elements),
	HEADERS_ALL_FN(doca_buf_inventory_get_num_free_elements),
	/* doca_buf_pool.h */
	HEADERS_ALL_FN(doca_buf_pool_create),
	HEADERS_ALL_FN(doca_buf_pool_destroy),
	HEADERS_ALL_FN(doca_buf_pool_start),
	HEADERS_ALL_FN(doca_buf_pool_stop),
	HEADERS_ALL_FN(doca_buf_pool_buf_alloc),
	HEADERS_ALL_FN(doca_buf_pool_set_user_data),
	HEADERS_ALL_FN(doca_buf_pool_get_user_data),
	HEADERS_ALL_FN(doca_buf_pool_set_element_alignment),
	HEADERS_ALL_FN(doca_buf_pool_get_element_alignment),
	HEADERS_ALL_FN(doca_buf_pool_get_num_elements),
	HEADERS_ALL_FN(doca_buf_pool_get_num_free_elements),
	/* doca_rdma.h */
	HEADERS_ALL_FN(doca_rdma_create),
	HEADERS_ALL_FN(doca_rdma_create_with_srq),
	HEADERS_ALL_FN(doca_rdma_destroy),
	HEADERS_ALL_FN(doca_rdma_as_ctx),
	HEADERS_ALL_FN(doca_rdma_export),
	HEADERS_ALL_FN(doca_rdma_connect),
	HEADERS_ALL_FN(doca_rdma_set_permissions),
	HEADERS_ALL_FN(doca_rdma_set_grh_enabled),
	HEADERS_ALL_FN(doca_rdma_get_dpa_handle),
	HEADERS_ALL_FN(doca_rdma_cap_task_write_is_supported),
	HEADERS_ALL_FN(doca_rdma_srq_create),
	HEADERS_ALL_FN(doca_rdma_srq_as_ctx),
	HEADERS_ALL_FN(doca_rdma_srq_set_type),
	HEADERS_ALL_FN(doca_rdma_srq_get_dpa_handle),
	/* doca_dma.h */
	HEADERS_ALL_FN(doca_dma_create),
	HEADERS_ALL_FN(doca_dma_destroy),
	HEADERS_ALL_FN(doca_dma_as_ctx),
	HEADERS_ALL_FN(doca_dma_cap_task_memcpy_is_supported),
	HEADERS_ALL_FN(doca_dma_task_memcpy_set_conf),
	HEADERS_ALL_FN(doca_dma_task_memcpy_alloc_init),
	HEADERS_ALL_FN(doca_dma_task_memcpy_as_task),
	HEADERS_ALL_FN(doca_dma_cap_get_max_num_tasks),
	HEADERS_ALL_FN(doca_dma_cap_task_memcpy_get_max_buf_size),
	HEADERS_ALL_FN(doca_dma_cap_task_memcpy_get_max_buf_list_len),
	HEADERS_ALL_FN(doca_dma_task_memcpy_set_src),
	HEADERS_ALL_FN(doca_dma_task_memcpy_get_src),
	HEADERS_ALL_FN(doca_dma_task_memcpy_set_dst),
	HEADERS_ALL_FN(doca_dma_task_memcpy_get_dst),
	/* doca_comm_channel.h: both forms of ep_create, by address */
	HEADERS_ALL_FN(doca_comm_channel_ep_create),
	HEADERS_ALL_FN(dpakit_soft_comm_channel_ep_create_attr),
	HEADERS_ALL_FN(doca_comm_channel_ep_sendto),
	HEADERS_ALL_FN(doca_comm_channel_ep_recvfrom),
	/* doca_cc.h, doca_cc_consumer.h, doca_cc_producer.h: the DOCA 2.5 names of Comch */
	HEADERS_ALL_FN(doca_cc_server_create),
	HEADERS_ALL_FN(doca_cc_server_event_connection_register),
	HEADERS_ALL_FN(doca_cc_server_get_device_repr),
	HEADERS_ALL_FN(doca_cc_client_create),
	HEADERS_ALL_FN(doca_cc_client_task_send_alloc_init),
	HEADERS_ALL_FN(doca_cc_connection_get_counter),
	HEADERS_ALL_FN(doca_cc_consumer_task_post_recv_alloc_init),
	HEADERS_ALL_FN(doca_cc_producer_task_send_alloc_init),
	HEADERS_ALL_FN(doca_cc_producer_task_send_get_buf),
};

/* Uses the table, the version macros and strlen (declared by the headers alone). */
static inline size_t headers_all_check(void)
{
	bool lte = DOCA_VERSION_LTE_CURRENT(2, 9, 0) && DOCA_VERSION_EQ_CURRENT(3, 0, 0);
	pthread_t self = pthread_self();
	(void)self;
	return sizeof(headers_all_functions) / sizeof(headers_all_functions[0]) +
	       strlen(doca_version()) + (lte ? 1 : 0);
}
