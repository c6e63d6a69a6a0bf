/*
 * dpakit soft device: the DPA device API, core (what kernels call).
 *
 * Kernels include this header. Built with dpacc they run on the DPA; built for the host they
 * run on the soft device, which provides these functions.
 */
#ifndef DOCA_DPA_DEV_H
#define DOCA_DPA_DEV_H

#include <stdint.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dpacc's kernel keywords; plain functions elsewhere. */
#ifndef __dpa_global__
#define __dpa_global__
#endif
#ifndef __dpa_rpc__
#define __dpa_rpc__
#endif

/* Flags of the device-side send and copy operations. */
enum doca_dpa_dev_submit_flag {
	DOCA_DPA_DEV_SUBMIT_FLAG_NONE = 0,
	DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH = (1 << 0),
	DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS = (1 << 1),
};

typedef enum {
	DOCA_DPA_DEV_COMP_SEND = 0,
	DOCA_DPA_DEV_COMP_RECV_RDMA_WRITE_IMM = 1,
	DOCA_DPA_DEV_COMP_RECV_SEND = 2,
	DOCA_DPA_DEV_COMP_RECV_SEND_IMM = 3,
	DOCA_DPA_DEV_COMP_SEND_ERR = 13,
	DOCA_DPA_DEV_COMP_RECV_ERR = 14,
} doca_dpa_dev_completion_type_t;

/* printf-style logging to the host. */
void doca_dpa_dev_log(doca_dpa_dev_log_level_t log_level, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

#define DOCA_DPA_DEV_LOG_CRIT(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_CRIT, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_ERR(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_ERROR, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_WARN(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_WARNING, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_INFO(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_INFO, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_DBG(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Ends this activation; the next trigger runs the kernel again from its entry. */
void doca_dpa_dev_thread_reschedule(void);

/* Ends this activation and the thread: nothing triggers it again. */
void doca_dpa_dev_thread_finish(void);

/* A launched kernel's thread: its index among the launch's threads (0 to num_threads - 1), and
 * their number. A DPA thread or an RPC is thread 0 of 1. */
unsigned int doca_dpa_dev_thread_rank(void);
unsigned int doca_dpa_dev_num_threads(void);

/* The local storage the host set with doca_dpa_thread_set_local_storage. */
doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void);

/* Triggers the thread attached to a notification completion. */
void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t comp_handle);

/* Takes the next element of a DPA completion; non-zero when one was taken. */
int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t dpa_comp_handle,
				doca_dpa_dev_completion_element_t *comp_element);

doca_dpa_dev_completion_type_t
doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t comp_element);

/* The user data of the context that produced the element (a DPA producer's ctx user data). */
uint32_t doca_dpa_dev_get_completion_user_data(doca_dpa_dev_completion_element_t comp_element);

/* Releases num_comp elements taken from a DPA completion. */
void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t dpa_comp_handle, uint64_t num_comp);

/* Re-arms a DPA completion so its next element triggers the attached thread. */
void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t dpa_comp_handle);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_H */
