/*
 * dpakit soft device: the context state machine every DOCA context follows.
 *
 * IDLE -> STARTING -> RUNNING -> STOPPING -> IDLE. Configure while IDLE; doca_ctx_start and
 * doca_ctx_stop may return DOCA_ERROR_IN_PROGRESS and finish through doca_pe_progress, which
 * reports each transition to the state-changed callback.
 */
#ifndef DOCA_CTX_H
#define DOCA_CTX_H

#include <stddef.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_ctx;
struct doca_dpa;

enum doca_ctx_states {
	DOCA_CTX_STATE_IDLE = 0,
	DOCA_CTX_STATE_STARTING = 1,
	DOCA_CTX_STATE_RUNNING = 2,
	DOCA_CTX_STATE_STOPPING = 3,
};

typedef void (*doca_ctx_state_changed_callback_t)(const union doca_data user_data,
						  struct doca_ctx *ctx,
						  enum doca_ctx_states prev_state,
						  enum doca_ctx_states next_state);

DOCA_STABLE
doca_error_t doca_ctx_start(struct doca_ctx *ctx);

/*
 * Stops a context. With tasks still allocated or in flight it moves to STOPPING, returns
 * DOCA_ERROR_IN_PROGRESS and flushes the tasks through their error callbacks; it reaches IDLE
 * in doca_pe_progress once every task is freed.
 */
DOCA_STABLE
doca_error_t doca_ctx_stop(struct doca_ctx *ctx);

DOCA_STABLE
doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, enum doca_ctx_states *state);

DOCA_STABLE
doca_error_t doca_ctx_set_user_data(struct doca_ctx *ctx, union doca_data user_data);

DOCA_STABLE
doca_error_t doca_ctx_get_user_data(const struct doca_ctx *ctx, union doca_data *user_data);

DOCA_STABLE
doca_error_t doca_ctx_set_state_changed_cb(struct doca_ctx *ctx,
					   doca_ctx_state_changed_callback_t cb);

/* Runs the context's datapath on a DPA (MsgQ DPA consumers and producers). */
DOCA_EXPERIMENTAL
doca_error_t doca_ctx_set_datapath_on_dpa(struct doca_ctx *ctx, struct doca_dpa *dpa_dev);

DOCA_STABLE
doca_error_t doca_ctx_get_num_inflight_tasks(const struct doca_ctx *ctx,
					     size_t *num_inflight_tasks);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_CTX_H */
