/*
 * Comch fast path, client side: an echo over producers and consumers with comch_data_server.c
 * (or the Rust example data_path_server). It connects through a host device to the server of a
 * name, then puts a consumer and a producer on the connection. Once the server has announced its
 * consumer, it sends COUNT messages of SIZE bytes one at a time (the bytes derived from the
 * message number, the number in the immediate data), waits for each echo on its consumer and
 * checks it byte for byte. It prints one summary line and exits 0 only if every echo matched;
 * with no server it gives up after 5 s.
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA it runs on the host of a BlueField.
 *
 *   cargo xtask soft-sdk && cargo xtask build-dpa --release
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comch_data_client.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comch_data_client
 *   ./comch_data_client [-p PCI_ADDR] [-s SERVER_NAME] [-c COUNT] [-b SIZE]
 *
 * One file on purpose, as a DOCA sample is: a user copies it into a project and builds it
 * with one compiler call; the server is its mirror image.
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

DOCA_LOG_REGISTER(COMCH_DATA_CLIENT);

#include "comch_common.h"

#define NUM_RECV 4		/* receives the consumer keeps posted */
#define NUM_SEND 1		/* one message at a time */
#define NUM_CTRL_TASKS 1	/* the control path carries no messages here, but a start needs tasks */
#define IMM_LEN 8		/* the message number, little-endian */
#define SPIN_USEC 2000		/* poll this long after an event: longer than a 1 MiB echo takes */
#define CONNECT_TIMEOUT_SEC 5
#define ECHO_TIMEOUT_SEC 5

/* What the callbacks share, reached through the contexts' user data. */
struct client_state {
	struct doca_comch_client *client;
	struct doca_comch_connection *connection; /* set once RUNNING */
	enum doca_ctx_states ctx_state;
	struct doca_comch_consumer *consumer;
	struct doca_comch_producer *producer;
	struct buffers rx, tx;
	bool stopping;		/* the fast path is being torn down: flushed receives are expected */
	bool peer_known;	/* the server announced its consumer */
	bool peer_gone;		/* ... and it expired since */
	uint32_t peer_consumer;
	size_t msg_size;
	uint64_t sent;		/* messages submitted */
	uint64_t echoes;	/* echoes received: the number of the one due next */
	bool send_in_flight;
	uint64_t mismatches;
	uint64_t send_errors;
	uint64_t recv_errors;
};

/* Byte i of message n; the Rust client uses the same rule, so either client may be checked by hand. */
static inline uint8_t pattern_byte(uint64_t n, size_t i)
{
	return (uint8_t)(n * 7 + i + (i >> 8) * 13);
}

static void encode_number(uint64_t n, uint8_t imm[IMM_LEN])
{
	for (int i = 0; i < IMM_LEN; i++)
		imm[i] = (uint8_t)(n >> (8 * i));
}

static uint64_t decode_number(const uint8_t imm[IMM_LEN])
{
	uint64_t n = 0;

	for (int i = 0; i < IMM_LEN; i++)
		n |= (uint64_t)imm[i] << (8 * i);
	return n;
}

/* ---- Flags ---- */

static doca_error_t register_flags(void)
{
	doca_error_t result;

	result = register_flag("p", "pci-addr", "<PCI_ADDR>",
			       "host device to connect through (default b1:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "server-name", "<NAME>",
				       "name of the server (default dpakit_comch_data)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>", "messages to exchange (default 1000)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("b", "size", "<BYTES>",
				       "bytes per message, at most 1 MiB; the server's -b must be as large "
				       "(default 4096)",
				       DOCA_ARGP_TYPE_INT, size_flag);
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

static void consumer_created(struct doca_comch_event_consumer *event,
			     struct doca_comch_connection *connection, uint32_t id)
{
	struct client_state *state = state_of(connection);

	(void)event;
	/* The server puts one consumer on the connection: the first is the one to send to. */
	if (state->peer_known)
		return;
	state->peer_consumer = id;
	state->peer_known = true;
	DOCA_LOG_DBG("the server's consumer %u is there", id);
}

static void consumer_expired(struct doca_comch_event_consumer *event,
			     struct doca_comch_connection *connection, uint32_t id)
{
	struct client_state *state = state_of(connection);

	(void)event;
	if (state->peer_known && id == state->peer_consumer)
		state->peer_gone = true;
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

static void message_sent(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			 union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;

	(void)task_user_data;
	state->send_in_flight = false;
	doca_task_free(doca_comch_producer_task_send_as_task(task));
}

static void message_failed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_producer_task_send_as_task(task);
	doca_error_t status = doca_task_get_status(t);

	state->send_in_flight = false;
	state->send_errors++;
	if (status == DOCA_ERROR_INVALID_VALUE)
		DOCA_LOG_ERR("message %lu does not fit the server's receive buffers: give the server -b %zu",
			     (unsigned long)task_user_data.u64, state->msg_size);
	else
		DOCA_LOG_ERR("message %lu failed: %s", (unsigned long)task_user_data.u64,
			     doca_error_get_descr(status));
	doca_task_free(t);
}

/* Whether an echo is message `n`'s bytes exactly. */
static bool echo_matches(const struct client_state *state, uint64_t n, const uint8_t *data, size_t len)
{
	if (len != state->msg_size)
		return false;
	for (size_t i = 0; i < len; i++)
		if (data[i] != pattern_byte(n, i))
			return false;
	return true;
}

static void echo_received(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			  union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;
	struct doca_buf *buf = doca_comch_consumer_task_post_recv_get_buf(task);
	const uint8_t *imm = doca_comch_consumer_task_post_recv_get_imm_data(task);
	void *data = NULL;
	size_t len = 0;

	(void)task_user_data;
	doca_buf_get_data(buf, &data);
	doca_buf_get_data_len(buf, &len);
	/* The echo due next, carrying its own number: anything else is a mismatch. */
	if (doca_comch_consumer_task_post_recv_get_imm_data_len(task) != IMM_LEN ||
	    decode_number(imm) != state->echoes || !echo_matches(state, state->echoes, data, len))
		state->mismatches++;
	state->echoes++;
	post_receive(task);
}

static void receive_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_consumer_task_post_recv_as_task(task);

	(void)task_user_data;
	/* A stop flushes the posted receives with an error; only other failures count. */
	if (!state->stopping) {
		state->recv_errors++;
		DOCA_LOG_ERR("a receive failed: %s", doca_error_get_descr(doca_task_get_status(t)));
	}
	doca_task_free(t);
}

/* The consumer runs: its receives are posted (each reposted in echo_received after that). */
static void consumer_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
				   enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct client_state *state = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	if (next_state != DOCA_CTX_STATE_RUNNING)
		return;
	for (uint32_t i = 0; i < NUM_RECV; i++) {
		struct doca_comch_consumer_task_post_recv *task;
		doca_error_t result =
			doca_comch_consumer_task_post_recv_alloc_init(state->consumer, state->rx.bufs[i], &task);

		if (result == DOCA_SUCCESS) {
			result = doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task));
			if (result != DOCA_SUCCESS)
				doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
		}
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot post a receive: %s", doca_error_get_descr(result));
			state->recv_errors++;
			return;
		}
	}
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

/* The server's consumer is there, or the connection is gone. */
static bool peer_settled(const void *arg)
{
	const struct client_state *state = arg;

	return state->peer_known || state->ctx_state != DOCA_CTX_STATE_RUNNING;
}

/* The echo is back and the send complete (its buffer free again), or something broke. */
static bool exchange_over(const void *arg)
{
	const struct client_state *state = arg;

	return (state->echoes >= state->sent && !state->send_in_flight) ||
	       state->send_errors > 0 || state->peer_gone || state->ctx_state != DOCA_CTX_STATE_RUNNING;
}

static bool idle(const void *arg)
{
	const struct client_state *state = arg;

	return state->ctx_state == DOCA_CTX_STATE_IDLE;
}

/* ---- Fast path ---- */

/* A consumer on the connection with NUM_RECV receives posted, and a producer. */
static doca_error_t fast_path_start(struct doca_dev *dev, struct doca_pe *pe, struct client_state *state)
{
	union doca_data user_data = {.ptr = state};
	struct doca_ctx *ctx;
	doca_error_t result;

	/* The server's producers write into this memory across PCI. */
	result = buffers_create(dev, DOCA_ACCESS_FLAG_PCI_READ_WRITE, NUM_RECV, state->msg_size, &state->rx);
	if (result != DOCA_SUCCESS)
		return result;
	result = buffers_create(dev, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, NUM_SEND, state->msg_size, &state->tx);
	if (result != DOCA_SUCCESS)
		return result;

	result = doca_comch_consumer_create(state->connection, state->rx.mmap, &state->consumer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a consumer: %s", doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_consumer_as_ctx(state->consumer);
	result = doca_comch_consumer_set_imm_data_len(state->consumer, IMM_LEN);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_task_post_recv_set_conf(state->consumer, echo_received, receive_failed,
								     NUM_RECV);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, consumer_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure the consumer: %s", doca_error_get_descr(result));
		return result;
	}
	/* A consumer registers with the peer through progress: RUNNING comes in the callback. */
	result = doca_ctx_start(ctx);
	if (result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("cannot start the consumer: %s", doca_error_get_descr(result));
		return result == DOCA_SUCCESS ? DOCA_ERROR_UNEXPECTED : result;
	}

	result = doca_comch_producer_create(state->connection, &state->producer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a producer: %s", doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_producer_as_ctx(state->producer);
	result = doca_comch_producer_task_send_set_conf(state->producer, message_sent, message_failed, NUM_SEND);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot start the producer: %s", doca_error_get_descr(result));
	return result;
}

/*
 * DOCA's order: the producer (its sends complete), then the consumer (its posted receives come
 * back flushed and are freed in receive_failed), then their memory.
 */
static doca_error_t fast_path_stop(struct doca_pe *pe, struct client_state *state)
{
	doca_error_t result = DOCA_SUCCESS, step;

	state->stopping = true;
	if (state->producer != NULL) {
		step = stop_ctx(pe, doca_comch_producer_as_ctx(state->producer));
		if (step == DOCA_SUCCESS)
			step = doca_comch_producer_destroy(state->producer);
		if (step != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot stop and destroy the producer: %s", doca_error_get_descr(step));
			result = step;
		}
		state->producer = NULL;
	}
	if (state->consumer != NULL) {
		step = stop_ctx(pe, doca_comch_consumer_as_ctx(state->consumer));
		if (step == DOCA_SUCCESS)
			step = doca_comch_consumer_destroy(state->consumer);
		if (step != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot stop and destroy the consumer: %s", doca_error_get_descr(step));
			result = step;
		}
		state->consumer = NULL;
	}
	buffers_destroy(&state->tx);
	buffers_destroy(&state->rx);
	return result;
}

/* The device hosts a Comch client and both ends of the fast path. */
static doca_error_t client_with_fast_path(const struct doca_devinfo *devinfo)
{
	doca_error_t result = doca_comch_cap_client_is_supported(devinfo);

	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_cap_is_supported(devinfo);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_cap_is_supported(devinfo);
	return result;
}

/* ---- Main ---- */

/* Sends count messages one at a time, each checked against its echo; the elapsed time. */
static doca_error_t echo_all(const struct comch_flags *cfg, struct doca_pe *pe,
			     doca_notification_handle_t handle, struct client_state *state, double *elapsed)
{
	struct doca_buf *buf = state->tx.bufs[0];
	double start = now_sec();

	for (uint64_t n = 0; n < (uint64_t)cfg->count; n++) {
		struct doca_comch_producer_task_send *task;
		uint8_t imm[IMM_LEN];
		doca_error_t result;

		for (size_t i = 0; i < state->msg_size; i++)
			state->tx.mem[i] = pattern_byte(n, i);
		encode_number(n, imm);
		result = doca_buf_set_data(buf, state->tx.mem, state->msg_size);
		if (result == DOCA_SUCCESS)
			result = doca_comch_producer_task_send_alloc_init(state->producer, buf, imm, IMM_LEN,
									  state->peer_consumer, &task);
		if (result == DOCA_SUCCESS) {
			struct doca_task *t = doca_comch_producer_task_send_as_task(task);

			doca_task_set_user_data(t, (union doca_data){.u64 = n});
			state->send_in_flight = true;
			state->sent++;
			result = doca_task_submit(t);
			if (result != DOCA_SUCCESS) {
				state->send_in_flight = false;
				state->sent--;
				doca_task_free(t);
			}
		}
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot send message %lu: %s", (unsigned long)n, doca_error_get_descr(result));
			return result;
		}
		if (!progress_until(pe, handle, SPIN_USEC, exchange_over, state, now_sec() + ECHO_TIMEOUT_SEC)) {
			DOCA_LOG_ERR("no echo of message %lu within %d s", (unsigned long)n, ECHO_TIMEOUT_SEC);
			return DOCA_ERROR_TIME_OUT;
		}
		if (state->send_errors > 0)
			return DOCA_ERROR_IO_FAILED;
		if (state->peer_gone || state->ctx_state != DOCA_CTX_STATE_RUNNING) {
			DOCA_LOG_ERR("the server left after %lu echoes", (unsigned long)state->echoes);
			return DOCA_ERROR_CONNECTION_RESET;
		}
	}
	*elapsed = now_sec() - start;
	return DOCA_SUCCESS;
}

static doca_error_t run(const struct comch_flags *cfg, struct doca_dev *dev, struct doca_pe *pe,
			struct client_state *state)
{
	struct doca_ctx *ctx;
	doca_notification_handle_t handle;
	double elapsed = 0;
	doca_error_t result, stopped, destroyed;

	result = doca_comch_client_create(dev, cfg->server_name, &state->client);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a client of `%s`: %s", cfg->server_name,
			     doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_client_as_ctx(state->client);
	result = doca_comch_client_task_send_set_conf(state->client, ctrl_task_done, ctrl_task_done,
						      NUM_CTRL_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_msg_recv_register(state->client, ctrl_message);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_consumer_register(state->client, consumer_created,
								   consumer_expired);
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
		DOCA_LOG_ERR("no Comch server `%s` answered within %d s on %s: start comch_data_server first",
			     cfg->server_name, CONNECT_TIMEOUT_SEC, cfg->pci_addr);
		result = DOCA_ERROR_TIME_OUT;
	} else if (state->ctx_state != DOCA_CTX_STATE_RUNNING) {
		DOCA_LOG_ERR("server `%s` refused the connection", cfg->server_name);
		result = DOCA_ERROR_CONNECTION_ABORTED;
	} else {
		DOCA_LOG_INFO("connected to server `%s`", cfg->server_name);
		result = fast_path_start(dev, pe, state);
		/* The server answers our consumer with its own; only then is there somewhere to send. */
		if (result == DOCA_SUCCESS &&
		    (!progress_until(pe, handle, SPIN_USEC, peer_settled, state, now_sec() + CONNECT_TIMEOUT_SEC) ||
		     !state->peer_known)) {
			DOCA_LOG_ERR("server `%s` put no consumer on the connection within %d s: is it "
				     "comch_data_server?",
				     cfg->server_name, CONNECT_TIMEOUT_SEC);
			result = DOCA_ERROR_TIME_OUT;
		}
		if (result == DOCA_SUCCESS)
			result = echo_all(cfg, pe, handle, state, &elapsed);
		if (result == DOCA_SUCCESS)
			DOCA_LOG_INFO("%d messages of %zu bytes, %lu mismatched, average round trip %.1f µs, "
				      "%.1f MB/s each way",
				      cfg->count, state->msg_size, (unsigned long)state->mismatches,
				      elapsed * 1e6 / cfg->count,
				      (double)cfg->count * (double)state->msg_size / elapsed / 1e6);
		stopped = fast_path_stop(pe, state);
		if (result == DOCA_SUCCESS)
			result = stopped;
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
		.server_name = "dpakit_comch_data",
		.count = 1000,
		.min_count = 1,
		.size = 4096,
	};
	struct client_state state = {0};
	struct doca_dev *dev = NULL;
	struct doca_pe *pe = NULL;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comch_data_client", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	if (open_device(cfg.pci_addr, client_with_fast_path, "a Comch client with a fast path (give a host-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	state.msg_size = (size_t)cfg.size;
	if (!size_supported(dev, state.msg_size)) {
		DOCA_LOG_ERR("device %s cannot move %zu-byte buffers on the fast path", cfg.pci_addr,
			     state.msg_size);
		goto dev_close;
	}
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a progress engine: %s", doca_error_get_descr(result));
		goto dev_close;
	}

	result = run(&cfg, dev, pe, &state);
	if (result == DOCA_SUCCESS && state.mismatches == 0 && state.send_errors == 0 && state.recv_errors == 0)
		exit_status = EXIT_SUCCESS;

	/* Teardown in DOCA's order: contexts and their memory (in run), PE, device. */
	if (doca_pe_destroy(pe) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
