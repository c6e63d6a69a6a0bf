/*
 * Comch fast path, server side: the echo partner of comch_data_client.c (or the Rust example
 * data_path_client). It listens under a name on the BlueField Arm device and the representor of
 * the clients' host function. Once a client has put its consumer on the connection, the server
 * puts a consumer and a producer of its own there and echoes every message its consumer receives
 * back to the client's consumer, bytes and immediate data alike. It exits once it has echoed
 * COUNT messages and every client has disconnected (or on SIGINT/SIGTERM).
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA it runs on a BlueField's Arm cores.
 *
 *   cargo xtask soft-sdk && cargo xtask build-dpa --release
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comch_data_server.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comch_data_server
 *   ./comch_data_server [-p PCI_ADDR] [-r REP_PCI_ADDR] [-s SERVER_NAME] [-c COUNT] [-b SIZE]
 *
 * One file on purpose, as a DOCA sample is: a user copies it into a project and builds it
 * with one compiler call; the client is its mirror image.
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
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_pe.h>

DOCA_LOG_REGISTER(COMCH_DATA_SERVER);

#include "comch_common.h"

#define NUM_BUFS 16		/* per client: receives posted, and as many echoes in flight */
#define MAX_IMM_LEN 32		/* the most immediate data a consumer takes */
#define NUM_CTRL_TASKS 1	/* the control path carries no messages here, but a start needs tasks */
#define SPIN_USEC 2000		/* poll this long after an event: longer than a 1 MiB echo takes */

struct server_state;

/*
 * One client's connection and the fast path on it. Receive k is echoed from send buffer k and
 * posted again once that echo is sent, so a client can never have more messages in the server
 * than it has buffers.
 */
struct session {
	struct session *next;
	struct server_state *state;
	struct doca_comch_connection *connection; /* valid while connected */
	bool connected;
	bool peer_known;	/* the client announced its consumer */
	bool peer_gone;		/* ... and it expired since: the client is leaving */
	uint32_t peer_consumer;
	bool fast_path;		/* our consumer and producer exist */
	bool stopping;		/* torn down, never to start again: flushed tasks are expected */
	struct doca_comch_consumer *consumer;
	struct doca_comch_producer *producer;
	struct buffers rx, tx;
	struct doca_comch_consumer_task_post_recv *recv[NUM_BUFS];
};

/* What the callbacks share, reached through the context's user data. */
struct server_state {
	struct doca_comch_server *server;
	struct doca_dev *dev;
	struct doca_pe *pe;
	size_t buf_size;
	struct session *sessions;
	uint32_t clients;	  /* connected right now */
	uint32_t clients_served;  /* connected at some point */
	uint64_t received;
	uint64_t echoed;
	uint64_t errors;
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
				       "name clients connect to (default dpakit_comch_data)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>",
				       "exit after echoing this many messages, once no client is left "
				       "(default 1000)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("b", "size", "<BYTES>",
				       "largest message echoed, at most 1 MiB; at least the clients' -b "
				       "(default 4096)",
				       DOCA_ARGP_TYPE_INT, size_flag);
	return result;
}

/* ---- Fast-path callbacks ---- */

/* Copies receive k into send buffer k and sends it, with the same immediate data, to the client. */
static doca_error_t echo(struct session *s, uint32_t k, struct doca_comch_consumer_task_post_recv *task)
{
	struct doca_buf *in = doca_comch_consumer_task_post_recv_get_buf(task);
	struct doca_buf *out = s->tx.bufs[k];
	uint32_t imm_len = doca_comch_consumer_task_post_recv_get_imm_data_len(task);
	uint8_t imm[MAX_IMM_LEN];
	struct doca_comch_producer_task_send *send;
	struct doca_task *t;
	void *data = NULL, *head = NULL;
	size_t len = 0;
	doca_error_t result;

	if (imm_len > sizeof(imm))
		return DOCA_ERROR_INVALID_VALUE;
	/* The send copies the immediate data; a local copy keeps the receive's bytes read-only. */
	memcpy(imm, doca_comch_consumer_task_post_recv_get_imm_data(task), imm_len);
	result = doca_buf_get_data(in, &data);
	if (result == DOCA_SUCCESS)
		result = doca_buf_get_data_len(in, &len);
	if (result == DOCA_SUCCESS)
		result = doca_buf_get_head(out, &head);
	if (result != DOCA_SUCCESS)
		return result;
	if (len > s->tx.size)
		return DOCA_ERROR_INVALID_VALUE; /* both sides' buffers have the size given with -b */
	memcpy(head, data, len);
	result = doca_buf_set_data(out, head, len);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_task_send_alloc_init(s->producer, out, imm, imm_len, s->peer_consumer,
								  &send);
	if (result != DOCA_SUCCESS)
		return result;
	t = doca_comch_producer_task_send_as_task(send);
	doca_task_set_user_data(t, (union doca_data){.u64 = k});
	result = doca_task_submit(t);
	if (result != DOCA_SUCCESS)
		doca_task_free(t);
	return result;
}

static void message_received(struct doca_comch_consumer_task_post_recv *task,
			     union doca_data task_user_data, union doca_data ctx_user_data)
{
	struct session *s = ctx_user_data.ptr;
	uint32_t k = (uint32_t)task_user_data.u64;
	doca_error_t result;

	s->state->received++;
	result = echo(s, k, task);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot echo a message: %s", doca_error_get_descr(result));
		s->state->errors++;
		post_receive(task);
	}
	/* Otherwise the receive stays ours until its echo is sent (echo_finished). */
}

static void receive_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	struct session *s = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_consumer_task_post_recv_as_task(task);

	(void)task_user_data;
	/* A stop flushes the posted receives with an error; only other failures count. */
	if (!s->stopping) {
		s->state->errors++;
		DOCA_LOG_ERR("a receive failed: %s", doca_error_get_descr(doca_task_get_status(t)));
	}
	doca_task_free(t);
}

/* An echo left (or failed): its send buffer is free, so its receive is posted again. */
static void echo_finished(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			  union doca_data ctx_user_data)
{
	struct session *s = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_producer_task_send_as_task(task);
	doca_error_t status = doca_task_get_status(t);
	uint32_t k = (uint32_t)task_user_data.u64;

	if (status == DOCA_SUCCESS) {
		s->state->echoed++;
	} else if (!s->stopping) {
		s->state->errors++;
		DOCA_LOG_ERR("an echo failed: %s", doca_error_get_descr(status));
	}
	doca_task_free(t);
	post_receive(s->recv[k]);
}

/* ---- Control-path callbacks ---- */

static struct server_state *state_of(struct doca_comch_connection *connection)
{
	struct doca_comch_server *server = doca_comch_server_get_server_ctx(connection);
	union doca_data user_data = {0};

	doca_ctx_get_user_data(doca_comch_server_as_ctx(server), &user_data);
	return user_data.ptr;
}

static struct session *session_of(struct doca_comch_connection *connection)
{
	return doca_comch_connection_get_user_data(connection).ptr;
}

static void ctrl_task_done(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void ctrl_message(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			 struct doca_comch_connection *connection)
{
	(void)event;
	(void)recv_buffer;
	(void)connection;
	DOCA_LOG_DBG("ignored a %u-byte control message", msg_len);
}

static void client_connected(struct doca_comch_event_connection_status_changed *event,
			     struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = state_of(connection);
	struct session *s;

	(void)event;
	if (!change_successful) {
		DOCA_LOG_WARN("a client could not connect");
		return;
	}
	state->clients++;
	state->clients_served++;
	DOCA_LOG_INFO("a client connected (%u connected)", state->clients);
	/* Its fast path comes later, in the main loop, once the client has announced its consumer. */
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		DOCA_LOG_ERR("out of memory for a client: it gets no echo");
		state->errors++;
		return;
	}
	s->state = state;
	s->connection = connection;
	s->connected = true;
	s->next = state->sessions;
	state->sessions = s;
	doca_comch_connection_set_user_data(connection, (union doca_data){.ptr = s});
}

static void client_disconnected(struct doca_comch_event_connection_status_changed *event,
				struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct server_state *state = state_of(connection);
	struct session *s = session_of(connection);

	(void)event;
	(void)change_successful;
	state->clients--;
	if (s != NULL) {
		s->connected = false;
		s->connection = NULL;
	}
	DOCA_LOG_INFO("a client disconnected (%u connected, %lu messages echoed so far)", state->clients,
		      (unsigned long)state->echoed);
}

static void consumer_created(struct doca_comch_event_consumer *event,
			     struct doca_comch_connection *connection, uint32_t id)
{
	struct session *s = session_of(connection);

	(void)event;
	/* A client puts one consumer on its connection: the first is the one to echo to. */
	if (s == NULL || s->peer_known)
		return;
	s->peer_consumer = id;
	s->peer_known = true;
}

static void consumer_expired(struct doca_comch_event_consumer *event,
			     struct doca_comch_connection *connection, uint32_t id)
{
	struct session *s = session_of(connection);

	(void)event;
	if (s != NULL && s->peer_known && id == s->peer_consumer)
		s->peer_gone = true;
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx,
			  enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	(void)user_data;
	(void)ctx;
	DOCA_LOG_DBG("server context: state %d -> %d", prev_state, next_state);
}

/* A session's consumer runs: its receives are posted (reposted after each message after that). */
static void consumer_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
				   enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct session *s = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	if (next_state != DOCA_CTX_STATE_RUNNING)
		return;
	for (uint32_t k = 0; k < NUM_BUFS; k++) {
		struct doca_task *t;
		doca_error_t result =
			doca_comch_consumer_task_post_recv_alloc_init(s->consumer, s->rx.bufs[k], &s->recv[k]);

		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot allocate a receive: %s", doca_error_get_descr(result));
			return;
		}
		t = doca_comch_consumer_task_post_recv_as_task(s->recv[k]);
		doca_task_set_user_data(t, (union doca_data){.u64 = k});
		result = doca_task_submit(t);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot post a receive: %s", doca_error_get_descr(result));
			doca_task_free(t);
			return;
		}
	}
}

/* ---- Sessions ---- */

/* A consumer with NUM_BUFS receives posted and a producer with as many send buffers. */
static doca_error_t fast_path_start(struct server_state *state, struct session *s)
{
	union doca_data user_data = {.ptr = s};
	struct doca_ctx *ctx;
	doca_error_t result;

	s->fast_path = true;
	/* The client's producers write into this memory across PCI. */
	result = buffers_create(state->dev, DOCA_ACCESS_FLAG_PCI_READ_WRITE, NUM_BUFS, state->buf_size, &s->rx);
	if (result != DOCA_SUCCESS)
		return result;
	result = buffers_create(state->dev, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, NUM_BUFS, state->buf_size, &s->tx);
	if (result != DOCA_SUCCESS)
		return result;

	/* The producer first: an echo may be due as soon as the client sees our consumer. */
	result = doca_comch_producer_create(s->connection, &s->producer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a producer: %s", doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_producer_as_ctx(s->producer);
	result = doca_comch_producer_task_send_set_conf(s->producer, echo_finished, echo_finished, NUM_BUFS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(state->pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot start a producer: %s", doca_error_get_descr(result));
		return result;
	}

	result = doca_comch_consumer_create(s->connection, s->rx.mmap, &s->consumer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a consumer: %s", doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_consumer_as_ctx(s->consumer);
	result = doca_comch_consumer_set_imm_data_len(s->consumer, MAX_IMM_LEN);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_task_post_recv_set_conf(s->consumer, message_received, receive_failed,
								     NUM_BUFS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, consumer_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(state->pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure a consumer: %s", doca_error_get_descr(result));
		return result;
	}
	/* A consumer registers with the peer through progress: RUNNING comes in the callback. */
	result = doca_ctx_start(ctx);
	if (result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("cannot start a consumer: %s", doca_error_get_descr(result));
		return result == DOCA_SUCCESS ? DOCA_ERROR_UNEXPECTED : result;
	}
	return DOCA_SUCCESS;
}

/*
 * DOCA's order: the producer (echoes still waiting fail, and their receives are posted again),
 * then the consumer (its posted receives come back flushed and are freed in receive_failed),
 * then their memory.
 */
static void fast_path_stop(struct server_state *state, struct session *s)
{
	doca_error_t result;

	s->stopping = true;
	if (s->producer != NULL) {
		result = stop_ctx(state->pe, doca_comch_producer_as_ctx(s->producer));
		if (result == DOCA_SUCCESS)
			result = doca_comch_producer_destroy(s->producer);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot stop and destroy a producer: %s", doca_error_get_descr(result));
			state->errors++;
		}
		s->producer = NULL;
	}
	if (s->consumer != NULL) {
		result = stop_ctx(state->pe, doca_comch_consumer_as_ctx(s->consumer));
		if (result == DOCA_SUCCESS)
			result = doca_comch_consumer_destroy(s->consumer);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot stop and destroy a consumer: %s", doca_error_get_descr(result));
			state->errors++;
		}
		s->consumer = NULL;
	}
	buffers_destroy(&s->tx);
	buffers_destroy(&s->rx);
	s->fast_path = false;
}

/*
 * Outside the callbacks: starts the fast path of clients that announced their consumer, stops
 * that of clients leaving (their consumer expired, or they disconnected), and forgets clients
 * that are gone. Stopping progresses the PE, whose callbacks may add sessions at the head: the
 * list is unlinked from in a second pass, which runs no callback.
 */
static void tend_sessions(struct server_state *state)
{
	struct session **link = &state->sessions;

	for (struct session *s = state->sessions; s != NULL; s = s->next) {
		if (!s->fast_path && s->connected && s->peer_known && !s->peer_gone && !s->stopping) {
			if (fast_path_start(state, s) != DOCA_SUCCESS) {
				/* The client learns it from the disconnection rather than waiting. */
				state->errors++;
				fast_path_stop(state, s);
				doca_comch_server_disconnect(state->server, s->connection);
			}
		} else if (s->fast_path && (s->peer_gone || !s->connected)) {
			fast_path_stop(state, s);
		}
	}
	while (*link != NULL) {
		struct session *s = *link;

		if (!s->connected && !s->fast_path) {
			*link = s->next;
			free(s);
		} else {
			link = &s->next;
		}
	}
}

/* The device hosts a Comch server and both ends of the fast path. */
static doca_error_t server_with_fast_path(const struct doca_devinfo *devinfo)
{
	doca_error_t result = doca_comch_cap_server_is_supported(devinfo);

	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_cap_is_supported(devinfo);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_cap_is_supported(devinfo);
	return result;
}

/* ---- Main ---- */

/* Echoed COUNT messages, and the clients that came have all left. */
static bool finished(const struct comch_flags *cfg, const struct server_state *state)
{
	return state->echoed >= (uint64_t)cfg->count && state->clients_served > 0 && state->clients == 0 &&
	       state->sessions == NULL;
}

static doca_error_t serve(const struct comch_flags *cfg, struct doca_dev_rep *rep,
			  struct server_state *state)
{
	struct doca_ctx *ctx;
	doca_notification_handle_t handle;
	double idle_since = now_sec();
	doca_error_t result, destroyed;

	result = doca_comch_server_create(state->dev, rep, cfg->server_name, &state->server);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create server `%s`: %s", cfg->server_name, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_server_as_ctx(state->server);
	result = doca_comch_server_task_send_set_conf(state->server, ctrl_task_done, ctrl_task_done,
						      NUM_CTRL_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_msg_recv_register(state->server, ctrl_message);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_connection_status_changed_register(
			state->server, client_connected, client_disconnected);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_consumer_register(state->server, consumer_created,
								   consumer_expired);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(state->pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_pe_get_notification_handle(state->pe, &handle);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure and start the server: %s", doca_error_get_descr(result));
		goto destroy;
	}
	DOCA_LOG_INFO("server `%s` listening on %s for clients of %s, echoing up to %zu bytes",
		      cfg->server_name, cfg->pci_addr, cfg->rep_pci_addr, state->buf_size);

	while (!interrupted && !finished(cfg, state)) {
		bool progressed = doca_pe_progress(state->pe);

		tend_sessions(state);
		if (progressed) {
			idle_since = now_sec();
			continue;
		}
		/* Busy for a moment after each event (the next message is usually close), then asleep. */
		if (now_sec() - idle_since > SPIN_USEC / 1e6)
			sleep_on_pe(state->pe, handle, 100);
	}
	if (interrupted)
		DOCA_LOG_INFO("interrupted: stopping");

	/* Fast paths first: a connection with producers or consumers on it cannot close. */
	for (struct session *s = state->sessions; s != NULL; s = s->next)
		if (s->fast_path)
			fast_path_stop(state, s);
	result = stop_ctx(state->pe, ctx);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot stop the server: %s", doca_error_get_descr(result));
	while (state->sessions != NULL) {
		struct session *s = state->sessions;

		state->sessions = s->next;
		free(s);
	}
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
		.server_name = "dpakit_comch_data",
		.count = 1000,
		.min_count = 0,
		.size = 4096,
	};
	struct server_state state = {0};
	struct doca_dev_rep *rep = NULL;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comch_data_server", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (open_device(cfg.pci_addr, server_with_fast_path, "a Comch server with a fast path (give the Arm-side device)", &state.dev) != DOCA_SUCCESS)
		goto argp_destroy;
	state.buf_size = (size_t)cfg.size;
	if (!size_supported(state.dev, state.buf_size)) {
		DOCA_LOG_ERR("device %s cannot move %zu-byte buffers on the fast path", cfg.pci_addr,
			     state.buf_size);
		goto dev_close;
	}
	if (open_representor(state.dev, cfg.rep_pci_addr, &rep) != DOCA_SUCCESS)
		goto dev_close;
	result = doca_pe_create(&state.pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a progress engine: %s", doca_error_get_descr(result));
		goto rep_close;
	}

	result = serve(&cfg, rep, &state);
	DOCA_LOG_INFO("%u client(s) served, %lu messages received, %lu echoed, %lu errors", state.clients_served,
		      (unsigned long)state.received, (unsigned long)state.echoed, (unsigned long)state.errors);
	if (result == DOCA_SUCCESS && state.errors == 0)
		exit_status = EXIT_SUCCESS;

	/* Teardown in DOCA's order: contexts and their memory (above), PE, representor, device. */
	if (doca_pe_destroy(state.pe) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
rep_close:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(state.dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
