/*
 * Comch control path, client side: ping-pong with comch_ctrl_server.c (or the Rust example
 * ctrl_path_server). It connects through a host device to the server of a name, then sends COUNT
 * messages one at a time ("TEXT N" for the N-th), waits for each echo and compares it byte for
 * byte. It prints one summary line and exits 0 only if every echo matched; with no server it
 * gives up after 5 s.
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA it runs on the host of a BlueField.
 *
 *   cargo xtask soft-sdk && cargo xtask build-dpa --release
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comch_ctrl_client.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comch_ctrl_client
 *   ./comch_ctrl_client [-p PCI_ADDR] [-s SERVER_NAME] [-t TEXT] [-c COUNT]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_argp.h>
#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>

DOCA_LOG_REGISTER(COMCH_CTRL_CLIENT);

#include "comch_common.h"

#define NUM_SEND_TASKS 1	/* one message at a time */
#define SPIN_USEC 200		/* keep polling this long after an event before sleeping */
#define CONNECT_TIMEOUT_SEC 5
#define ECHO_TIMEOUT_SEC 5

/* What the callbacks share, reached through the context's user data. */
struct client_state {
	struct doca_comch_client *client;
	struct doca_comch_connection *connection; /* set once RUNNING */
	enum doca_ctx_states ctx_state;
	char *msg;		/* the message in flight, which its echo must equal */
	uint32_t msg_len;
	bool send_in_flight;
	bool echo_received;
	uint64_t mismatches;
	uint64_t send_errors;
};

/* ---- Flags ---- */

static doca_error_t register_flags(void)
{
	doca_error_t result;

	result = register_flag("p", "pci-addr", "<PCI_ADDR>",
			       "host device to connect through (default b1:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("t", "text", "<TEXT>",
				       "message text; the N-th message is \"TEXT N\" (default ping)",
				       DOCA_ARGP_TYPE_STRING, text_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>", "messages to exchange (default 1000)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "server-name", "<NAME>",
				       "name of the server (default dpakit_comch_ctrl)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	return result;
}

/* ---- Callbacks ---- */

static struct client_state *state_of(struct doca_comch_connection *connection)
{
	struct doca_comch_client *client = doca_comch_client_get_client_ctx(connection);
	union doca_data user_data = {0};

	doca_ctx_get_user_data(doca_comch_client_as_ctx(client), &user_data);
	return user_data.ptr;
}

static void message_sent(struct doca_comch_task_send *task, union doca_data task_user_data,
			 union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;

	(void)task_user_data;
	state->send_in_flight = false;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void message_failed(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_task_send_as_task(task);

	(void)task_user_data;
	state->send_in_flight = false;
	state->send_errors++;
	DOCA_LOG_ERR("a send failed: %s", doca_error_get_descr(doca_task_get_status(t)));
	doca_task_free(t);
}

static void echo_received(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			  struct doca_comch_connection *connection)
{
	struct client_state *state = state_of(connection);

	(void)event;
	/* A second echo of one message counts as a mismatch too. */
	if (state->echo_received || msg_len != state->msg_len ||
	    memcmp(recv_buffer, state->msg, msg_len) != 0)
		state->mismatches++;
	state->echo_received = true;
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx,
			  enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct client_state *state = user_data.ptr;

	(void)ctx;
	DOCA_LOG_DBG("client context: state %d -> %d", prev_state, next_state);
	state->ctx_state = next_state;
	if (next_state == DOCA_CTX_STATE_RUNNING &&
	    doca_comch_client_get_connection(state->client, &state->connection) != DOCA_SUCCESS)
		DOCA_LOG_ERR("the client runs but has no connection");
}

/* ---- Progress ---- */

/*
 * Progresses until done(state) holds; false once the deadline passes. Busy for a moment after
 * each event (an echo comes back within microseconds), then asleep on the notification handle.
 */
/* Connected (RUNNING), or refused by the server (back to IDLE). */
static bool start_settled(const void *arg)
{
	const struct client_state *state = arg;

	return state->ctx_state == DOCA_CTX_STATE_RUNNING || state->ctx_state == DOCA_CTX_STATE_IDLE;
}

/* The echo is back and the send complete (its buffer free again), or the connection is gone. */
static bool exchange_over(const void *arg)
{
	const struct client_state *state = arg;

	return (state->echo_received && !state->send_in_flight) || state->ctx_state != DOCA_CTX_STATE_RUNNING;
}

static bool idle(const void *arg)
{
	const struct client_state *state = arg;

	return state->ctx_state == DOCA_CTX_STATE_IDLE;
}

/* ---- Main ---- */

/* Sends count messages one at a time, each checked against its echo; the average round trip. */
static doca_error_t ping_pong(const struct comch_flags *cfg, struct doca_pe *pe,
			      doca_notification_handle_t handle, struct client_state *state,
			      double *avg_usec)
{
	struct doca_comch_task_send *task;
	doca_error_t result;
	double start = now_sec();

	for (int i = 0; i < cfg->count; i++) {
		state->msg_len = (uint32_t)sprintf(state->msg, "%s %d", cfg->text, i);
		state->echo_received = false;
		state->send_in_flight = true;
		result = doca_comch_client_task_send_alloc_init(state->client, state->connection, state->msg,
								state->msg_len, &task);
		if (result == DOCA_SUCCESS) {
			result = doca_task_submit(doca_comch_task_send_as_task(task));
			if (result != DOCA_SUCCESS)
				doca_task_free(doca_comch_task_send_as_task(task));
		}
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot send message %d: %s", i, doca_error_get_descr(result));
			return result;
		}
		if (!progress_until(pe, handle, SPIN_USEC, exchange_over, state, now_sec() + ECHO_TIMEOUT_SEC)) {
			DOCA_LOG_ERR("no echo of message %d within %d s", i, ECHO_TIMEOUT_SEC);
			return DOCA_ERROR_TIME_OUT;
		}
		if (state->ctx_state != DOCA_CTX_STATE_RUNNING) {
			DOCA_LOG_ERR("the server closed the connection after %d exchanges", i);
			return DOCA_ERROR_CONNECTION_RESET;
		}
	}
	*avg_usec = (now_sec() - start) * 1e6 / cfg->count;
	return DOCA_SUCCESS;
}

static doca_error_t run(const struct comch_flags *cfg, struct doca_dev *dev, struct doca_pe *pe,
			struct client_state *state)
{
	struct doca_ctx *ctx;
	doca_notification_handle_t handle;
	double avg_usec = 0;
	doca_error_t result, stopped, destroyed;

	result = doca_comch_client_create(dev, cfg->server_name, &state->client);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a client of `%s`: %s", cfg->server_name,
			     doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_client_as_ctx(state->client);
	result = doca_comch_client_task_send_set_conf(state->client, message_sent, message_failed,
						      NUM_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_msg_recv_register(state->client, echo_received);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_pe_get_notification_handle(pe, &handle);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure the client: %s", doca_error_get_descr(result));
		goto destroy;
	}

	/* A client starts in the background: RUNNING (or IDLE if refused) arrives in state_changed. */
	state->ctx_state = DOCA_CTX_STATE_STARTING;
	result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("cannot start the client: %s", doca_error_get_descr(result));
		goto destroy;
	}
	if (!progress_until(pe, handle, SPIN_USEC, start_settled, state, now_sec() + CONNECT_TIMEOUT_SEC)) {
		DOCA_LOG_ERR("no Comch server `%s` answered within %d s on %s: start comch_ctrl_server first",
			     cfg->server_name, CONNECT_TIMEOUT_SEC, cfg->pci_addr);
		result = DOCA_ERROR_TIME_OUT;
	} else if (state->ctx_state != DOCA_CTX_STATE_RUNNING) {
		DOCA_LOG_ERR("server `%s` refused the connection", cfg->server_name);
		result = DOCA_ERROR_CONNECTION_ABORTED;
	} else {
		DOCA_LOG_INFO("connected to server `%s`", cfg->server_name);
		result = ping_pong(cfg, pe, handle, state, &avg_usec);
		if (result == DOCA_SUCCESS)
			DOCA_LOG_INFO("%d messages, %lu mismatched, average round trip %.1f µs", cfg->count,
				      (unsigned long)state->mismatches, avg_usec);
	}

	/* Stopping tells the server; the context is IDLE once the last task is back. */
	if (state->ctx_state != DOCA_CTX_STATE_IDLE) {
		stopped = doca_ctx_stop(ctx);
		if (stopped == DOCA_SUCCESS || stopped == DOCA_ERROR_IN_PROGRESS)
			stopped = progress_until(pe, handle, SPIN_USEC, idle, state, now_sec() + COMCH_STOP_TIMEOUT_SEC) ?
					  DOCA_SUCCESS :
					  DOCA_ERROR_TIME_OUT;
		if (stopped != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot stop the client: %s", doca_error_get_descr(stopped));
			if (result == DOCA_SUCCESS)
				result = stopped;
		}
	}
destroy:
	destroyed = doca_comch_client_destroy(state->client);
	if (destroyed != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot destroy the client: %s", doca_error_get_descr(destroyed));
		if (result == DOCA_SUCCESS)
			result = destroyed;
	}
	return result;
}

int main(int argc, char **argv)
{
	struct comch_flags cfg = {
		.pci_addr = "b1:00.0",
		.text = "ping",
		.server_name = "dpakit_comch_ctrl",
		.count = 1000,
		.min_count = 1,
	};
	struct client_state state = {0};
	struct doca_dev *dev = NULL;
	struct doca_pe *pe = NULL;
	uint32_t max_msg_size = 0;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comch_ctrl_client", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	if (open_device(cfg.pci_addr, doca_comch_cap_client_is_supported, "a Comch client (give a host-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	/* The longest message, "TEXT N", must fit in one Comch message. */
	result = doca_comch_cap_get_max_msg_size(doca_dev_as_devinfo(dev), &max_msg_size);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot read the max message size: %s", doca_error_get_descr(result));
		goto dev_close;
	}
	state.msg = malloc(strlen(cfg.text) + 16);
	if (state.msg == NULL || strlen(cfg.text) + 12 > max_msg_size) {
		DOCA_LOG_ERR("--text is too long: a message holds at most %u bytes with its number",
			     max_msg_size);
		goto dev_close;
	}
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a progress engine: %s", doca_error_get_descr(result));
		goto dev_close;
	}

	result = run(&cfg, dev, pe, &state);
	if (result == DOCA_SUCCESS && state.mismatches == 0 && state.send_errors == 0)
		exit_status = EXIT_SUCCESS;

	/* Teardown in DOCA's order: context (in run), PE, device. */
	if (doca_pe_destroy(pe) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	free(state.msg);
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
