/*
 * dpakit soft device: the progress engine and tasks.
 *
 * A progress engine runs the completion callbacks of the contexts connected to it, one call of
 * doca_pe_progress at a time, on the thread that calls it. It is not thread safe: use a PE and
 * its contexts from one thread at a time.
 */
#ifndef DOCA_PE_H
#define DOCA_PE_H

#include <stdint.h>
#include <stddef.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_pe;
struct doca_ctx;
struct doca_task;

/* Flags of doca_task_submit_ex. */
enum doca_task_submit_flag {
	DOCA_TASK_SUBMIT_FLAG_NONE = 0,
	DOCA_TASK_SUBMIT_FLAG_FLUSH = (1 << 0),
	DOCA_TASK_SUBMIT_FLAG_OPTIMIZE_REPORTS = (1 << 1),
};

enum doca_pe_event_mode {
	DOCA_PE_EVENT_MODE_PROGRESS_SELECTIVE = 0,
	DOCA_PE_EVENT_MODE_PROGRESS_ALL = 1,
};

/* Completion (or error) callback of a generic task. */
typedef void (*doca_task_completion_cb_t)(struct doca_task *task, union doca_data task_user_data,
					  union doca_data ctx_user_data);

DOCA_STABLE
doca_error_t doca_pe_create(struct doca_pe **pe);

/* Fails with IN_USE while contexts connected to it still exist. */
DOCA_STABLE
doca_error_t doca_pe_destroy(struct doca_pe *pe);

/* Connects an IDLE context: its completions and events run from doca_pe_progress. */
DOCA_STABLE
doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx);

/* Runs the callbacks of what is ready; 1 if anything ran, 0 otherwise. */
DOCA_STABLE
uint8_t doca_pe_progress(struct doca_pe *pe);

/* A pollable handle that becomes readable after doca_pe_request_notification when work arrives. */
DOCA_STABLE
doca_error_t doca_pe_get_notification_handle(const struct doca_pe *pe,
					     doca_notification_handle_t *handle);

DOCA_STABLE
doca_error_t doca_pe_request_notification(struct doca_pe *pe);

DOCA_STABLE
doca_error_t doca_pe_clear_notification(struct doca_pe *pe, doca_notification_handle_t handle);

DOCA_STABLE
doca_error_t doca_task_submit(struct doca_task *task);

DOCA_EXPERIMENTAL
doca_error_t doca_task_submit_ex(struct doca_task *task, uint32_t flags);

/* Returns a task to its context's pool. */
DOCA_STABLE
void doca_task_free(struct doca_task *task);

/* The outcome of a completed task (meaningful in error callbacks). */
DOCA_STABLE
doca_error_t doca_task_get_status(const struct doca_task *task);

DOCA_STABLE
void doca_task_set_user_data(struct doca_task *task, union doca_data user_data);

DOCA_STABLE
union doca_data doca_task_get_user_data(const struct doca_task *task);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_PE_H */
