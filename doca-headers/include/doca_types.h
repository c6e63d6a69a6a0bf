/*
 * dpakit soft device: types shared across the DOCA API.
 */
#ifndef DOCA_TYPES_H
#define DOCA_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <doca_compat.h>
/* <string.h> where there is one, as doca_compat.h explains. */
#ifdef __has_include
#if __has_include(<string.h>)
#include <string.h>
#endif
#else
#include <string.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* User data carried by tasks, events and contexts; passed by value to every callback. */
union doca_data {
	void *ptr;
	uint64_t u64;
};

/* An OS handle to wait on: a file descriptor on Linux; and the value of none. */
#ifdef _WIN32
typedef void *doca_event_handle_t;
#define doca_event_invalid_handle INVALID_HANDLE_VALUE
#else
typedef int doca_event_handle_t;
#define doca_event_invalid_handle -1
#endif

/* What doca_pe_get_notification_handle returns (a pollable file descriptor on Linux). */
typedef doca_event_handle_t doca_notification_handle_t;

/* A scatter/gather element. */
struct doca_gather_list {
	void *addr;
	uint64_t len;
	struct doca_gather_list *next;
};

#ifdef __linux__
#include <linux/types.h>
typedef __be16 doca_be16_t;
typedef __be32 doca_be32_t;
typedef __be64 doca_be64_t;
#else
typedef uint16_t doca_be16_t;
typedef uint32_t doca_be32_t;
typedef uint64_t doca_be64_t;
#endif

/* Who may access the memory of an mmap (bit flags). */
enum doca_access_flag {
	DOCA_ACCESS_FLAG_LOCAL_READ_ONLY = 0,
	DOCA_ACCESS_FLAG_LOCAL_READ_WRITE = (1 << 0),
	DOCA_ACCESS_FLAG_RDMA_READ = (1 << 1),
	DOCA_ACCESS_FLAG_RDMA_WRITE = (1 << 2),
	DOCA_ACCESS_FLAG_RDMA_ATOMIC = (1 << 3),
	DOCA_ACCESS_FLAG_PCI_READ_ONLY = (1 << 4),
	DOCA_ACCESS_FLAG_PCI_READ_WRITE = (1 << 5),
	DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING = (1 << 6),
};

/* The kind of a PCI function. */
enum doca_pci_func_type {
	DOCA_PCI_FUNC_TYPE_PF = 0,
	DOCA_PCI_FUNC_TYPE_VF = 1,
	DOCA_PCI_FUNC_TYPE_SF = 2,
};

/*
 * Handles that name DOCA objects inside DPA kernels. The host reads them with the
 * *_get_dpa_handle functions and hands them to kernels; they are plain integers.
 */
typedef uint64_t doca_dpa_dev_t;
typedef uint64_t doca_dpa_dev_uintptr_t;
typedef uint64_t doca_dpa_dev_async_ops_t;
typedef uint64_t doca_dpa_dev_completion_t;
typedef uint64_t doca_dpa_dev_completion_element_t;
typedef uint64_t doca_dpa_dev_notification_completion_t;
typedef uint64_t doca_dpa_dev_hash_table_t;
typedef uint64_t doca_dpa_dev_comch_consumer_t;
typedef uint64_t doca_dpa_dev_comch_producer_t;
typedef uint64_t doca_dpa_dev_comch_consumer_completion_t;
typedef uint64_t doca_dpa_dev_comch_consumer_completion_element_t;
typedef uint32_t doca_dpa_dev_mmap_t;
typedef uint64_t doca_dpa_dev_buf_t;
typedef uint64_t doca_dpa_dev_buf_arr_t;
/* Sync events exported to the DPA (doca_sync_event.h, doca_dpa_dev_sync_event.h). */
typedef uint64_t doca_dpa_dev_sync_event_t;
typedef uint64_t doca_dpa_dev_sync_event_remote_net_t;
/* RDMA contexts on the DPA (doca_rdma.h; not modelled by the soft device). */
typedef uint64_t doca_dpa_dev_rdma_t;
typedef uint64_t doca_dpa_dev_rdma_srq_t;

/* Levels of doca_dpa_dev_log (doca_dpa_dev.h), for host and device code alike. */
typedef enum doca_dpa_dev_log_level {
	DOCA_DPA_DEV_LOG_LEVEL_DISABLE = 10,
	DOCA_DPA_DEV_LOG_LEVEL_CRIT = 20,
	DOCA_DPA_DEV_LOG_LEVEL_ERROR = 30,
	DOCA_DPA_DEV_LOG_LEVEL_WARNING = 40,
	DOCA_DPA_DEV_LOG_LEVEL_INFO = 50,
	DOCA_DPA_DEV_LOG_LEVEL_DEBUG = 60,
} doca_dpa_dev_log_level_t;

#ifdef __cplusplus
}
#endif

#endif /* DOCA_TYPES_H */
