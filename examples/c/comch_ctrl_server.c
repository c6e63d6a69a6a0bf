/*
 * Comch control path, server side: a ping-pong partner for comch_ctrl_client.c (or the Rust
 * example ctrl_path_client). It listens under a name on the BlueField Arm device and the
 * representor of the client's host function, echoes every message back on the connection it came
 * from, and exits once it has echoed COUNT messages and every client has disconnected (or on
 * SIGINT/SIGTERM).
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA it runs on a BlueField's Arm cores.
 *
 *   cargo xtask soft-sdk && cargo xtask build-dpa --release
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comch_ctrl_server.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comch_ctrl_server
 *   ./comch_ctrl_server [-p PCI_ADDR] [-r REP_PCI_ADDR] [-s SERVER_NAME] [-c COUNT]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <poll.h>
#include <signal.h>
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

DOCA_LOG_REGISTER(COMCH_CTRL_SERVER);

#include "comch_common.h"

#define NUM_SEND_TASKS 32	/* echoes in flight at once, over every client */
#define SPIN_USEC 200		/* keep polling this long after an event before sleeping */

/* What the callbacks share, reached through the context's user data. */
struct server_state {
	struct doca_comch_server *server;
	uint32_t clients;	  /* connected right now */
	uint32_t clients_served;  /* connected at some point */
	uint64_t received;
	uint64_t echoed;
	uint64_t send_errors;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int signo)
{
	(void)signo;
	interrupted = 1;
}

/* ---- Flags ---- */

static doca_error_t register_flags(void)
{
	doca_error_t result;

	result = register_flag("p", "pci-addr", "<PCI_ADDR>",
			       "Arm-side device to listen on (default 03:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("r", "rep-pci", "<PCI_ADDR>",
				       "representor of the clients' host function (default b1:00.0)",
				       DOCA_ARGP_TYPE_STRING, rep_pci_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "server-name", "<NAME>",
				       "name clients connect to (default dpakit_comch_ctrl)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>",
				       "exit after echoing this many messages, once no client is left "
				       "(default 1000)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	return result;
}

/* ---- Callbacks ---- */

static struct server_state *state_of(struct doca_comch_connection *connection)
{
	struct doca_comch_server *server = doca_comch_server_get_server_ctx(connection);
	union doca_data user_data = {0};

	doca_ctx_get_user_data(doca_comch_server_as_ctx(server), &user_data);
	return user_data.ptr;
}

static void echo_sent(struct doca_comch_task_send *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	struct server_state *state = ctx_user_data.ptr;

	state->echoed++;
	free(task_user_data.ptr);
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void echo_failed(struct doca_comch_task_send *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	struct server_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_task_send_as_task(task);

	state->send_errors++;
	DOCA_LOG_ERR("an echo failed: %s", doca_error_get_descr(doca_task_get_status(t)));
	free(task_user_data.ptr);
	doca_task_free(t);
}

static void message_received(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			     struct doca_comch_connection *connection)
{
	struct server_state *state = state_of(connection);
	struct doca_comch_task_send *task;
	struct doca_task *t;
	doca_error_t result;
	/* The receive buffer is ours during this call only; the echo keeps a copy until it is sent. */
	void *copy = malloc(msg_len > 0 ? msg_len : 1);

	(void)event;
	state->received++;
	if (copy == NULL) {
		DOCA_LOG_ERR("out of memory for an echo");
		state->send_errors++;
		return;
	}
	memcpy(copy, recv_buffer, msg_len);
	result = doca_comch_server_task_send_alloc_init(state->server, connection, copy, msg_len, &task);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot allocate an echo: %s", doca_error_get_descr(result));
		state->send_errors++;
		free(copy);
		return;
	}
	t = doca_comch_task_send_as_task(task);
	doca_task_set_user_data(t, (union doca_data){.ptr = copy});
	result = doca_task_submit(t);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot send an echo: %s", doca_error_get_descr(result));
		state->send_errors++;
		doca_task_free(t);
		free(copy);
	}
}

static void client_connected(struct doca_comch_event_connection_status_changed *event,
			     struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = state_of(connection);

	(void)event;
	if (!change_successful) {
		DOCA_LOG_WARN("a client could not connect");
		return;
	}
	state->clients++;
	state->clients_served++;
	DOCA_LOG_INFO("a client connected (%u connected)", state->clients);
}

static void client_disconnected(struct doca_comch_event_connection_status_changed *event,
				struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = state_of(connection);

	(void)event;
	(void)change_successful;
	state->clients--;
	DOCA_LOG_INFO("a client disconnected (%u connected, %lu messages echoed so far)", state->clients,
		      (unsigned long)state->echoed);
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx,
			  enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	(void)user_data;
	(void)ctx;
	DOCA_LOG_DBG("server context: state %d -> %d", prev_state, next_state);
}

/* ---- Main ---- */

/* Echoed COUNT messages, and the clients that came have all left. */
static bool finished(const struct comch_flags *cfg, const struct server_state *state)
{
	return state->echoed >= (uint64_t)cfg->count && state->clients_served > 0 && state->clients == 0;
}

static doca_error_t serve(const struct comch_flags *cfg, struct doca_dev *dev, struct doca_dev_rep *rep,
			  struct doca_pe *pe, struct server_state *state)
{
	struct doca_ctx *ctx;
	doca_notification_handle_t handle;
	double idle_since = now_sec();
	doca_error_t result, destroyed;

	result = doca_comch_server_create(dev, rep, cfg->server_name, &state->server);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create server `%s`: %s", cfg->server_name, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_server_as_ctx(state->server);
	result = doca_comch_server_task_send_set_conf(state->server, echo_sent, echo_failed, NUM_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_msg_recv_register(state->server, message_received);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_connection_status_changed_register(
			state->server, client_connected, client_disconnected);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_pe_get_notification_handle(pe, &handle);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure and start the server: %s", doca_error_get_descr(result));
		goto destroy;
	}
	DOCA_LOG_INFO("server `%s` listening on %s for clients of %s", cfg->server_name, cfg->pci_addr,
		      cfg->rep_pci_addr);

	while (!interrupted && !finished(cfg, state)) {
		if (doca_pe_progress(pe)) {
			idle_since = now_sec();
			continue;
		}
		/* Busy for a moment after each event (the next message is usually close), then asleep. */
		if (now_sec() - idle_since > SPIN_USEC / 1e6)
			sleep_on_pe(pe, handle, 100);
	}
	if (interrupted)
		DOCA_LOG_INFO("interrupted: stopping");

	result = stop_ctx(pe, ctx);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot stop the server: %s", doca_error_get_descr(result));
destroy:
	destroyed = doca_comch_server_destroy(state->server);
	if (destroyed != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot destroy the server: %s", doca_error_get_descr(destroyed));
		if (result == DOCA_SUCCESS)
			result = destroyed;
	}
	return result;
}

int main(int argc, char **argv)
{
	struct comch_flags cfg = {
		.pci_addr = "03:00.0",
		.rep_pci_addr = "b1:00.0",
		.server_name = "dpakit_comch_ctrl",
		.count = 1000,
		.min_count = 0,
	};
	struct server_state state = {0};
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe = NULL;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comch_ctrl_server", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (open_device(cfg.pci_addr, doca_comch_cap_server_is_supported, "a Comch server (give the Arm-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	if (open_representor(dev, cfg.rep_pci_addr, &rep) != DOCA_SUCCESS)
		goto dev_close;
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a progress engine: %s", doca_error_get_descr(result));
		goto rep_close;
	}

	result = serve(&cfg, dev, rep, pe, &state);
	DOCA_LOG_INFO("%u client(s) served, %lu messages received, %lu echoed, %lu send errors",
		      state.clients_served, (unsigned long)state.received, (unsigned long)state.echoed,
		      (unsigned long)state.send_errors);
	if (result == DOCA_SUCCESS && state.send_errors == 0)
		exit_status = EXIT_SUCCESS;

	/* Teardown in DOCA's order: contexts (above), PE, representor, device. */
	if (doca_pe_destroy(pe) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
rep_close:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
