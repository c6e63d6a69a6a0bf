/*
 * Comch fast path, server side of the test pair (with comch_fast_client.c).
 *
 * The server listens under a service name on the Arm-side device and the representor of the
 * client's function. When the client connects, it creates a producer and a consumer on the
 * connection (in the main loop, once the connection callback has reported it), learns the
 * client's consumer from the new-consumer event, and streams COUNT messages of SIZE bytes to it
 * while checking the COUNT messages the client streams back. Then it stops its consumer (the
 * posted receives come back flushed and are freed in the error callback) and its producer, waits
 * for the client to disconnect, stops the server and closes everything. Exits 0 only if every
 * message arrived once, in order and intact, and every send completed. See comch_fast_common.h
 * for the DOCA sample idioms it exercises.
 *
 *   ./comch_fast_server [-p PCI] [-r REP_PCI] [-s NAME] [-c COUNT] [-b SIZE]
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

DOCA_LOG_REGISTER(COMCH_FAST_SERVER);

#include "comch_fast_common.h"

struct server_state {
	struct doca_comch_server *server;
	struct doca_comch_connection *connection; /* the one client */
	bool connected;
	bool disconnected;
	uint32_t extra_clients; /* connections beyond the first: the test has one client */
	struct fast_side side;
};

static struct server_state *server_state_of(struct doca_comch_connection *connection)
{
	struct doca_comch_server *server = doca_comch_server_get_server_ctx(connection);
	union doca_data user_data = {0};

	if (server == NULL || doca_ctx_get_user_data(doca_comch_server_as_ctx(server), &user_data) != DOCA_SUCCESS)
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
	struct server_state *state = server_state_of(connection);

	(void)event;
	(void)recv_buffer;
	/* Everything goes over the fast path: a control message is unexpected. */
	DOCA_LOG_ERR("unexpected %u-byte control message", msg_len);
	if (state != NULL)
		state->side.errors++;
}

static void client_connected(struct doca_comch_event_connection_status_changed *event,
			     struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = server_state_of(connection);

	(void)event;
	if (state == NULL)
		return;
	if (!change_successful) {
		DOCA_LOG_ERR("a client failed to connect");
		state->side.errors++;
		return;
	}
	if (state->connected || state->disconnected) {
		DOCA_LOG_ERR("a second client connected; this test serves one");
		state->extra_clients++;
		return;
	}
	state->connection = connection;
	state->connected = true;
	DOCA_LOG_INFO("client connected");
}

static void client_disconnected(struct doca_comch_event_connection_status_changed *event,
				struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = server_state_of(connection);

	(void)event;
	(void)change_successful;
	if (state == NULL || connection != state->connection)
		return;
	state->disconnected = true;
	DOCA_LOG_INFO("client disconnected");
}

static void new_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *connection,
			 uint32_t id)
{
	struct server_state *state = server_state_of(connection);

	(void)event;
	if (state != NULL && connection == state->connection)
		fast_side_new_consumer(&state->side, id);
}

static void expired_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *connection,
			     uint32_t id)
{
	struct server_state *state = server_state_of(connection);

	(void)event;
	if (state != NULL && connection == state->connection)
		fast_side_expired_consumer(&state->side, id);
}

static void server_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
				 enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	(void)user_data;
	(void)ctx;
	DOCA_LOG_DBG("server context: %d -> %d", prev_state, next_state);
}

/* ---- Waiting ---- */

/* Both consumers are there, or they cannot be: an error, or the peer gone. */
static bool ready_settled(const void *arg)
{
	const struct server_state *state = arg;

	return fast_side_ready_settled(&state->side) || state->disconnected;
}

static bool client_arrived(const void *arg)
{
	const struct server_state *state = arg;

	return state->connected || state->side.errors > 0;
}

/* The exchange is over, or cannot finish: an error, or the client gone. */
static bool exchange_settled(const void *arg)
{
	const struct server_state *state = arg;
	const struct fast_side *side = &state->side;

	return fast_side_done(side) || side->errors > 0 || side->bad > 0 || side->consumer_fell_back || state->disconnected ||
	       side->remote_expired;
}

static bool exchange_done(const void *arg)
{
	const struct server_state *state = arg;

	return fast_side_done(&state->side) || state->side.errors > 0 || state->side.bad > 0;
}

static bool client_left(const void *arg)
{
	const struct server_state *state = arg;

	return state->disconnected;
}

/* ---- The run ---- */

static doca_error_t open_representor(struct doca_dev *dev, const char *pci_addr, struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **rep_list;
	uint32_t nb_reps = 0;
	doca_error_t result = doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &rep_list, &nb_reps);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to list representors: %s", doca_error_get_descr(result));
		return result;
	}
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < nb_reps; i++) {
		uint8_t is_equal = 0;

		if (doca_devinfo_rep_is_equal_pci_addr(rep_list[i], pci_addr, &is_equal) != DOCA_SUCCESS || !is_equal)
			continue;
		result = doca_dev_rep_open(rep_list[i], rep);
		if (result != DOCA_SUCCESS)
			DOCA_LOG_ERR("Failed to open representor %s: %s", pci_addr, doca_error_get_descr(result));
		break;
	}
	if (result == DOCA_ERROR_NOT_FOUND)
		DOCA_LOG_ERR("no representor at PCI address %s", pci_addr);
	doca_devinfo_rep_destroy_list(rep_list);
	return result;
}

static doca_error_t serve(const struct fast_config *cfg, struct doca_dev *dev, struct doca_dev_rep *rep,
			  struct doca_pe *pe, struct server_state *state)
{
	struct fast_side *side = &state->side;
	struct doca_ctx *ctx;
	doca_error_t result, step;
	double started;

	result = doca_comch_server_create(dev, rep, cfg->service_name, &state->server);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create server `%s`: %s", cfg->service_name, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_server_as_ctx(state->server);
	result = doca_comch_server_task_send_set_conf(state->server, ctrl_send_done, ctrl_send_done, FAST_CTRL_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_msg_recv_register(state->server, ctrl_msg_received);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_connection_status_changed_register(state->server, client_connected,
										   client_disconnected);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_consumer_register(state->server, new_consumer, expired_consumer);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, server_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to configure the server: %s", doca_error_get_descr(result));
		goto destroy;
	}
	result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to start the server: %s", doca_error_get_descr(result));
		goto destroy;
	}
	DOCA_LOG_INFO("server `%s` listening: %u messages of %u bytes each way", cfg->service_name, cfg->count,
		      cfg->size);

	if (!fast_progress_until(pe, client_arrived, state, FAST_STEP_TIMEOUT_SEC) || !state->connected) {
		DOCA_LOG_ERR("no client connected within %.0f s", FAST_STEP_TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
		goto stop;
	}
	/* The connection is there: a producer and a consumer on it. */
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
		/* Completions already due still arrive after the client left; more would not. */
		DOCA_LOG_ERR("the client left before the exchange finished");
		result = DOCA_ERROR_CONNECTION_RESET;
	} else if (fast_side_done(side)) {
		DOCA_LOG_INFO("exchange finished in %.3f s", fast_now() - started);
	}

stop_fast_path:
	/* Sample order: consumer, then producer; the posted receives come back flushed. */
	step = fast_side_stop(side, false);
	if (result == DOCA_SUCCESS)
		result = step;
	if (result == DOCA_SUCCESS && !fast_progress_until(pe, client_left, state, FAST_STEP_TIMEOUT_SEC)) {
		DOCA_LOG_ERR("the client did not disconnect within %.0f s", FAST_STEP_TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
	}
stop:
	step = fast_stop_ctx(pe, ctx, "server");
	if (result == DOCA_SUCCESS)
		result = step;
destroy:
	step = doca_comch_server_destroy(state->server);
	if (step != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to destroy the server: %s", doca_error_get_descr(step));
		if (result == DOCA_SUCCESS)
			result = step;
	}
	return result;
}

int main(int argc, char **argv)
{
	struct fast_config cfg = {
		.pci_addr = "03:00.0",
		.rep_pci_addr = "b1:00.0",
		.service_name = "dpakit_comch_fast_test",
		.count = 2000,
		.size = 4096,
	};
	struct server_state state;
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe = NULL;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	memset(&state, 0, sizeof(state));
	result = doca_log_backend_create_standard();
	if (result != DOCA_SUCCESS)
		return EXIT_FAILURE;
	result = doca_argp_init("comch_fast_server", &cfg);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to init ARGP resources: %s", doca_error_get_descr(result));
		return EXIT_FAILURE;
	}
	result = fast_register_params(true);
	if (result != DOCA_SUCCESS)
		goto argp_cleanup;
	result = doca_argp_start(argc, argv);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to parse input: %s", doca_error_get_descr(result));
		goto argp_cleanup;
	}
	fast_log_version("comch_fast_server");

	result = fast_open_device(&cfg, true, &dev);
	if (result != DOCA_SUCCESS)
		goto argp_cleanup;
	result = open_representor(dev, cfg.rep_pci_addr, &rep);
	if (result != DOCA_SUCCESS)
		goto dev_close;
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create progress engine: %s", doca_error_get_descr(result));
		goto rep_close;
	}
	fast_side_init(&state.side, "server", true, &cfg, dev, pe);

	result = serve(&cfg, dev, rep, pe, &state);
	if (state.extra_clients > 0)
		result = DOCA_ERROR_UNEXPECTED;
	if (fast_side_report(&state.side) && result == DOCA_SUCCESS)
		exit_status = EXIT_SUCCESS;

	if (doca_pe_destroy(pe) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to destroy progress engine");
		exit_status = EXIT_FAILURE;
	}
rep_close:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to close representor");
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
