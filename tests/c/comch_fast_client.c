/*
 * Comch fast path, client side of the test pair (with comch_fast_server.c).
 *
 * The client connects through a host device to the server of a service name: its doca_ctx_start
 * must answer DOCA_ERROR_IN_PROGRESS, and the state callback reports RUNNING once connected.
 * Then it creates a producer and a consumer on the connection, learns the server's consumer from
 * the new-consumer event, and streams COUNT messages of SIZE bytes to it while checking the COUNT
 * messages the server streams back. At the end it frees its still-posted receives with
 * doca_task_free and only then stops its consumer (which must still reach IDLE, with no callback
 * for the freed tasks), stops its producer, stops the client (the disconnection) and closes
 * everything. Exits 0 only if every message arrived once, in order and intact, and every send
 * completed. See comch_fast_common.h for the DOCA sample idioms it exercises.
 *
 *   ./comch_fast_client [-p PCI] [-s NAME] [-c COUNT] [-b SIZE]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <doca_argp.h>
#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(COMCH_FAST_CLIENT);

#include "comch_fast_common.h"

struct client_state {
	struct doca_comch_client *client;
	struct doca_comch_connection *connection; /* once RUNNING */
	enum doca_ctx_states client_state;
	bool was_running;
	struct fast_side side;
};

static struct client_state *client_state_of(struct doca_comch_connection *connection)
{
	struct doca_comch_client *client = doca_comch_client_get_client_ctx(connection);
	union doca_data user_data = {0};

	if (client == NULL || doca_ctx_get_user_data(doca_comch_client_as_ctx(client), &user_data) != DOCA_SUCCESS)
		return NULL;
	return user_data.ptr;
}

/* ---- Control-path callbacks ---- */

static void ctrl_send_done(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void ctrl_msg_received(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			      struct doca_comch_connection *connection)
{
	struct client_state *state = client_state_of(connection);

	(void)event;
	(void)recv_buffer;
	DOCA_LOG_ERR("unexpected %u-byte control message", msg_len);
	if (state != NULL)
		state->side.errors++;
}

static void new_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *connection,
			 uint32_t id)
{
	struct client_state *state = client_state_of(connection);

	(void)event;
	if (state != NULL)
		fast_side_new_consumer(&state->side, id);
}

static void expired_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *connection,
			     uint32_t id)
{
	struct client_state *state = client_state_of(connection);

	(void)event;
	if (state != NULL)
		fast_side_expired_consumer(&state->side, id);
}

/* RUNNING: connected, and the connection is ours to put the fast path on. */
static void client_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
				 enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct client_state *state = user_data.ptr;
	doca_error_t result;

	(void)ctx;
	DOCA_LOG_DBG("client context: %d -> %d", prev_state, next_state);
	state->client_state = next_state;
	if (next_state != DOCA_CTX_STATE_RUNNING)
		return;
	state->was_running = true;
	result = doca_comch_client_get_connection(state->client, &state->connection);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to get the connection: %s", doca_error_get_descr(result));
		state->side.errors++;
	}
}

/* ---- Waiting ---- */

/* Both consumers are there, or they cannot be: an error, or the peer gone. */
static bool ready_settled(const void *arg)
{
	const struct client_state *state = arg;

	return fast_side_ready_settled(&state->side) || state->client_state != DOCA_CTX_STATE_RUNNING;
}

static bool start_settled(const void *arg)
{
	const struct client_state *state = arg;

	return state->client_state == DOCA_CTX_STATE_RUNNING || state->client_state == DOCA_CTX_STATE_IDLE;
}

static bool exchange_settled(const void *arg)
{
	const struct client_state *state = arg;
	const struct fast_side *side = &state->side;

	return fast_side_done(side) || side->errors > 0 || side->bad > 0 || side->consumer_fell_back || side->remote_expired ||
	       state->client_state != DOCA_CTX_STATE_RUNNING;
}

static bool exchange_done(const void *arg)
{
	const struct client_state *state = arg;

	return fast_side_done(&state->side) || state->side.errors > 0 || state->side.bad > 0;
}

static bool client_idle(const void *arg)
{
	const struct client_state *state = arg;

	return state->client_state == DOCA_CTX_STATE_IDLE;
}

/* ---- The run ---- */

static doca_error_t run(const struct fast_config *cfg, struct doca_dev *dev, struct doca_pe *pe,
			struct client_state *state)
{
	struct fast_side *side = &state->side;
	struct doca_ctx *ctx;
	doca_error_t result, step;
	double started;

	result = doca_comch_client_create(dev, cfg->service_name, &state->client);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create client of `%s`: %s", cfg->service_name, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_client_as_ctx(state->client);
	result = doca_comch_client_task_send_set_conf(state->client, ctrl_send_done, ctrl_send_done, FAST_CTRL_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_msg_recv_register(state->client, ctrl_msg_received);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_consumer_register(state->client, new_consumer, expired_consumer);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, client_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to configure the client: %s", doca_error_get_descr(result));
		goto destroy;
	}
	/* The client connects through progress: IN_PROGRESS now, RUNNING in the state callback. */
	state->client_state = DOCA_CTX_STATE_STARTING;
	result = doca_ctx_start(ctx);
	if (result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("Failed to start the client: %s (expected %s)", doca_error_get_name(result),
			     doca_error_get_name(DOCA_ERROR_IN_PROGRESS));
		if (result == DOCA_SUCCESS) {
			result = DOCA_ERROR_UNEXPECTED;
			goto stop;
		}
		goto destroy;
	}
	if (!fast_progress_until(pe, start_settled, state, FAST_STEP_TIMEOUT_SEC)) {
		DOCA_LOG_ERR("no server `%s` answered within %.0f s", cfg->service_name, FAST_STEP_TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
		goto stop;
	}
	if (state->client_state != DOCA_CTX_STATE_RUNNING || state->connection == NULL) {
		DOCA_LOG_ERR("the server refused the connection");
		result = DOCA_ERROR_CONNECTION_ABORTED;
		goto stop;
	}
	DOCA_LOG_INFO("connected to `%s`: %u messages of %u bytes each way", cfg->service_name, cfg->count,
		      cfg->size);

	result = fast_side_start(side, state->connection);
	if (result != DOCA_SUCCESS)
		goto stop_fast_path;
	if (!fast_progress_until(pe, ready_settled, state, FAST_STEP_TIMEOUT_SEC)) {
		fast_side_log_not_ready(side, true);
		result = DOCA_ERROR_TIME_OUT;
		goto stop_fast_path;
	}
	if (!fast_side_ready(side) || side->errors > 0) {
		fast_side_log_not_ready(side, false);
		result = DOCA_ERROR_NOT_CONNECTED;
		goto stop_fast_path;
	}
	started = fast_now();
	result = fast_side_start_sending(side);
	if (result != DOCA_SUCCESS)
		goto stop_fast_path;
	if (!fast_progress_until(pe, exchange_settled, state, FAST_EXCHANGE_TIMEOUT_SEC)) {
		DOCA_LOG_ERR("the exchange did not finish within %.0f s", FAST_EXCHANGE_TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
	} else if (!exchange_done(state) &&
		   !fast_progress_until(pe, exchange_done, state, FAST_PEER_GONE_GRACE_SEC)) {
		/* Completions already due still arrive after the server left; more would not. */
		DOCA_LOG_ERR("the exchange broke off (server %s)",
			     state->client_state != DOCA_CTX_STATE_RUNNING ? "disconnected" :
			     side->remote_expired			   ? "consumer expired" :
										     "still there");
		result = DOCA_ERROR_IO_FAILED;
	} else if (fast_side_done(side)) {
		double elapsed = fast_now() - started;

		DOCA_LOG_INFO("exchange finished in %.3f s: %.1f MB/s each way", elapsed,
			      (double)side->count * (double)side->size / elapsed / 1e6);
	}

stop_fast_path:
	/* Sample order: the posted receives freed, then the consumer stopped, then the producer. */
	step = fast_side_stop(side, true);
	if (result == DOCA_SUCCESS)
		result = step;
stop:
	/* Stopping the client is the disconnection; IDLE comes through progress. */
	if (state->client_state != DOCA_CTX_STATE_IDLE) {
		step = doca_ctx_stop(ctx);
		if (step == DOCA_SUCCESS || step == DOCA_ERROR_IN_PROGRESS)
			step = fast_progress_until(pe, client_idle, state, FAST_STEP_TIMEOUT_SEC) ? DOCA_SUCCESS :
												    DOCA_ERROR_TIME_OUT;
		if (step != DOCA_SUCCESS) {
			DOCA_LOG_ERR("Failed to stop the client: %s", doca_error_get_descr(step));
			if (result == DOCA_SUCCESS)
				result = step;
		}
	}
destroy:
	step = doca_comch_client_destroy(state->client);
	if (step != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to destroy the client: %s", doca_error_get_descr(step));
		if (result == DOCA_SUCCESS)
			result = step;
	}
	return result;
}

int main(int argc, char **argv)
{
	struct fast_config cfg = {
		.pci_addr = "b1:00.0",
		.service_name = "dpakit_comch_fast_test",
		.count = 2000,
		.size = 4096,
	};
	struct client_state state;
	struct doca_dev *dev = NULL;
	struct doca_pe *pe = NULL;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	memset(&state, 0, sizeof(state));
	result = doca_log_backend_create_standard();
	if (result != DOCA_SUCCESS)
		return EXIT_FAILURE;
	result = doca_argp_init("comch_fast_client", &cfg);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to init ARGP resources: %s", doca_error_get_descr(result));
		return EXIT_FAILURE;
	}
	result = fast_register_params(false);
	if (result != DOCA_SUCCESS)
		goto argp_cleanup;
	result = doca_argp_start(argc, argv);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to parse input: %s", doca_error_get_descr(result));
		goto argp_cleanup;
	}
	fast_log_version("comch_fast_client");

	result = fast_open_device(&cfg, false, &dev);
	if (result != DOCA_SUCCESS)
		goto argp_cleanup;
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create progress engine: %s", doca_error_get_descr(result));
		goto dev_close;
	}
	fast_side_init(&state.side, "client", false, &cfg, dev, pe);

	result = run(&cfg, dev, pe, &state);
	if (fast_side_report(&state.side) && result == DOCA_SUCCESS)
		exit_status = EXIT_SUCCESS;

	if (doca_pe_destroy(pe) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to destroy progress engine");
		exit_status = EXIT_FAILURE;
	}
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to close device");
		exit_status = EXIT_FAILURE;
	}
argp_cleanup:
	doca_argp_destroy();
	return exit_status;
}
