/*
 * A DOCA 2.5 Comm Channel program: the control path under its 2.5 names (doca_cc_*), which the
 * soft SDK keeps for programs written before DOCA 2.7 renamed it Comch.
 *
 * One program, forked in two as on a BlueField: the child is the server, on the Arm device
 * 03:00.0 with the representor of the host PF b1:00.0; the parent is the client, on the host
 * device b1:00.0. The client sends NUM_MESSAGES messages, the first once its context is RUNNING
 * and each next one from the completion of the previous send; the server echoes each from its
 * receive callback; the client checks every echo against what it sent, in order, and the
 * connection's counters at the end. Only doca_cc_* and DOCA Core (device, context, progress
 * engine, task) functions are used.
 *
 * Exits 0, after one summary line, only if all NUM_MESSAGES echoes matched and the server
 * exited 0 too.
 *
 *   cargo xtask soft-sdk
 *   cc tests/c/cc_2_5_client_server.c $(PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig \
 *      pkg-config --cflags --libs doca-comch doca-argp doca-common) -Wl,-rpath,target/soft-doca/lib \
 *      -Wall -Wextra -Werror -o /tmp/cc25
 *   DPAKIT_SOFT_RUNTIME_DIR=/tmp/cc25rt /tmp/cc25
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

#define SERVER_PCI "03:00.0"
#define SERVER_REP_PCI "b1:00.0"
#define CLIENT_PCI "b1:00.0"
#define NUM_MESSAGES 100
#define MSG_SIZE 64
#define SERVER_SEND_TASKS (NUM_MESSAGES + 8) /* every echo may be in flight at once */
#define CLIENT_SEND_TASKS 1		     /* one send at a time */
#define TIMEOUT_SEC 20			     /* each side gives up after this long */

static const char *program = "cc_2_5_client_server";

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Progresses the PE until *done holds; false once the deadline passes. */
static bool progress_until(struct doca_pe *pe, const bool *done, double deadline)
{
	const struct timespec nap = {.tv_sec = 0, .tv_nsec = 20000};

	while (!*done) {
		if (doca_pe_progress(pe))
			continue;
		if (now_sec() > deadline)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

/* Stops a context and progresses until it is IDLE (a Comm Channel context stops in the background). */
static doca_error_t stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states state = DOCA_CTX_STATE_IDLE;
	double deadline = now_sec() + TIMEOUT_SEC;
	doca_error_t result;

	if (doca_ctx_get_state(ctx, &state) == DOCA_SUCCESS && state == DOCA_CTX_STATE_IDLE)
		return DOCA_SUCCESS;
	result = doca_ctx_stop(ctx);
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS)
		return result;
	while (doca_ctx_get_state(ctx, &state) == DOCA_SUCCESS && state != DOCA_CTX_STATE_IDLE) {
		if (now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
		doca_pe_progress(pe);
	}
	return DOCA_SUCCESS;
}

/* Opens the device at pci_addr if it can host what `supported` checks. */
static doca_error_t open_device(const char *pci_addr, doca_error_t (*supported)(const struct doca_devinfo *),
				struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n = 0;
	doca_error_t result = doca_devinfo_create_list(&list, &n);

	if (result != DOCA_SUCCESS)
		return result;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		result = supported(list[i]);
		if (result == DOCA_SUCCESS)
			result = doca_dev_open(list[i], dev);
		break;
	}
	doca_devinfo_destroy_list(list);
	return result;
}

/* Opens the network representor of dev at pci_addr. */
static doca_error_t open_representor(struct doca_dev *dev, const char *pci_addr, struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **list;
	uint32_t n = 0;
	doca_error_t result = doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &list, &n);

	if (result != DOCA_SUCCESS)
		return result;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_rep_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		result = doca_dev_rep_open(list[i], rep);
		break;
	}
	doca_devinfo_rep_destroy_list(list);
	return result;
}

static void fail(const char *side, const char *what, doca_error_t result)
{
	fprintf(stderr, "%s: %s: %s: %s\n", program, side, what, doca_error_get_descr(result));
}

/* ==== Server (the child: BlueField Arm side) ==== */

struct server_state {
	struct doca_cc_server *server;
	uint32_t connected;	 /* clients connected now */
	uint32_t served;	 /* clients that connected at some point */
	uint32_t received;
	uint32_t echoed;
	uint32_t errors;
	bool finished;		 /* a client came and left */
};

static struct server_state *server_of(struct doca_cc_connection *connection)
{
	union doca_data user_data = {0};

	doca_ctx_get_user_data(doca_cc_server_as_ctx(doca_cc_server_get_server_ctx(connection)), &user_data);
	return user_data.ptr;
}

static void echo_done(struct doca_cc_task_send *task, union doca_data task_user_data, union doca_data ctx_user_data)
{
	struct server_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_cc_task_send_as_task(task);

	if (doca_task_get_status(t) == DOCA_SUCCESS) {
		state->echoed++;
	} else {
		state->errors++;
		fail("server", "an echo failed", doca_task_get_status(t));
	}
	free(task_user_data.ptr);
	doca_task_free(t);
}

static void message_received(struct doca_cc_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			     struct doca_cc_connection *connection)
{
	struct server_state *state = server_of(connection);
	struct doca_cc_task_send *task;
	doca_error_t result;
	/* The receive buffer is ours during this call only: the echo sends a copy. */
	void *copy = malloc(msg_len > 0 ? msg_len : 1);

	(void)event;
	state->received++;
	if (copy == NULL) {
		state->errors++;
		return;
	}
	memcpy(copy, recv_buffer, msg_len);
	result = doca_cc_server_task_send_alloc_init(state->server, connection, copy, msg_len, &task);
	if (result == DOCA_SUCCESS) {
		doca_task_set_user_data(doca_cc_task_send_as_task(task), (union doca_data){.ptr = copy});
		result = doca_task_submit(doca_cc_task_send_as_task(task));
		if (result != DOCA_SUCCESS)
			doca_task_free(doca_cc_task_send_as_task(task));
	}
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot echo a message", result);
		state->errors++;
		free(copy);
	}
}

static void client_connected(struct doca_cc_event_connection_status_changed *event,
			     struct doca_cc_connection *connection, uint8_t change_successful)
{
	struct server_state *state = server_of(connection);

	(void)event;
	if (!change_successful)
		return;
	state->connected++;
	state->served++;
}

static void client_disconnected(struct doca_cc_event_connection_status_changed *event,
				struct doca_cc_connection *connection, uint8_t change_successful)
{
	struct server_state *state = server_of(connection);

	(void)event;
	(void)change_successful;
	state->connected--;
	state->finished = state->connected == 0;
}

/* Listens under `name`; writes one byte to ready_fd once listening; returns the exit status. */
static int run_server(const char *name, int ready_fd)
{
	struct server_state state = {0};
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL, *got_rep = NULL;
	struct doca_pe *pe = NULL;
	struct doca_ctx *ctx;
	doca_error_t result;
	int status = EXIT_FAILURE;

	result = open_device(SERVER_PCI, doca_cc_cap_server_is_supported, &dev);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot open device " SERVER_PCI, result);
		return EXIT_FAILURE;
	}
	result = open_representor(dev, SERVER_REP_PCI, &rep);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot open representor " SERVER_REP_PCI, result);
		goto close_dev;
	}
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot create a progress engine", result);
		goto close_rep;
	}
	result = doca_cc_server_create(dev, rep, name, &state.server);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot create the server", result);
		goto destroy_pe;
	}
	ctx = doca_cc_server_as_ctx(state.server);
	result = doca_cc_server_task_send_set_conf(state.server, echo_done, echo_done, SERVER_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_cc_server_event_msg_recv_register(state.server, message_received);
	if (result == DOCA_SUCCESS)
		result = doca_cc_server_event_connection_register(state.server, client_connected,
								  client_disconnected);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = &state});
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot configure and start the server", result);
		goto destroy_server;
	}
	/* The 2.5 name of the representor getter answers the representor the server was made with. */
	result = doca_cc_server_get_device_repr(state.server, &got_rep);
	if (result != DOCA_SUCCESS || got_rep != rep) {
		fprintf(stderr, "%s: server: doca_cc_server_get_device_repr does not give the representor back\n",
			program);
		state.errors++;
	}
	if (write(ready_fd, "R", 1) != 1)
		state.errors++;
	close(ready_fd);
	ready_fd = -1;

	if (!progress_until(pe, &state.finished, now_sec() + TIMEOUT_SEC)) {
		fprintf(stderr, "%s: server: no client came and left within %d s (%u served, %u received)\n",
			program, TIMEOUT_SEC, state.served, state.received);
		state.errors++;
	}
	result = stop_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		fail("server", "cannot stop the server", result);
		state.errors++;
	}
	if (state.received != NUM_MESSAGES || state.echoed != NUM_MESSAGES) {
		fprintf(stderr, "%s: server: received %u and echoed %u messages, expected %d\n", program,
			state.received, state.echoed, NUM_MESSAGES);
		state.errors++;
	}
	if (state.errors == 0)
		status = EXIT_SUCCESS;
destroy_server:
	if (doca_cc_server_destroy(state.server) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
destroy_pe:
	if (doca_pe_destroy(pe) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
close_rep:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
close_dev:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
	if (ready_fd >= 0)
		close(ready_fd);
	return status;
}

/* ==== Client (the parent: host side) ==== */

struct client_state {
	struct doca_cc_client *client;
	struct doca_cc_connection *connection; /* once RUNNING */
	enum doca_ctx_states ctx_state;
	char msgs[NUM_MESSAGES][MSG_SIZE];	/* each stays put until its send completes */
	uint32_t msg_lens[NUM_MESSAGES];
	uint32_t sent;		/* sends completed */
	uint32_t submitted;
	uint32_t echoes;	/* echoes received */
	uint32_t matched;	/* echoes equal to their message */
	uint32_t errors;
	bool settled;		/* RUNNING, or back to IDLE */
	bool done;		/* every echo is back and every send complete, or gave up */
};

static struct client_state *client_of(struct doca_cc_connection *connection)
{
	union doca_data user_data = {0};

	doca_ctx_get_user_data(doca_cc_client_as_ctx(doca_cc_client_get_client_ctx(connection)), &user_data);
	return user_data.ptr;
}

static void update_done(struct client_state *state)
{
	state->done = state->errors > 0 || (state->echoes == NUM_MESSAGES && state->sent == NUM_MESSAGES);
}

/* Sends message number state->submitted. */
static void send_next(struct client_state *state)
{
	uint32_t i = state->submitted;
	struct doca_cc_task_send *task;
	doca_error_t result;

	result = doca_cc_client_task_send_alloc_init(state->client, state->connection, state->msgs[i],
						     state->msg_lens[i], &task);
	if (result == DOCA_SUCCESS) {
		result = doca_task_submit(doca_cc_task_send_as_task(task));
		if (result != DOCA_SUCCESS)
			doca_task_free(doca_cc_task_send_as_task(task));
	}
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot send a message", result);
		state->errors++;
		update_done(state);
		return;
	}
	state->submitted++;
}

/* A send completed: the next message goes from here. */
static void message_sent(struct doca_cc_task_send *task, union doca_data task_user_data, union doca_data ctx_user_data)
{
	struct client_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_cc_task_send_as_task(task);
	doca_error_t status = doca_task_get_status(t);

	(void)task_user_data;
	doca_task_free(t);
	if (status != DOCA_SUCCESS) {
		fail("client", "a send failed", status);
		state->errors++;
		update_done(state);
		return;
	}
	state->sent++;
	if (state->submitted < NUM_MESSAGES)
		send_next(state);
	update_done(state);
}

/* Echoes come back in the order of the messages. */
static void echo_received(struct doca_cc_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			  struct doca_cc_connection *connection)
{
	struct client_state *state = client_of(connection);
	uint32_t i = state->echoes;

	(void)event;
	if (i < NUM_MESSAGES && msg_len == state->msg_lens[i] && memcmp(recv_buffer, state->msgs[i], msg_len) == 0)
		state->matched++;
	else
		fprintf(stderr, "%s: client: echo %u does not match its message\n", program, i);
	state->echoes++;
	update_done(state);
}

/* RUNNING: the connection is up, the first message goes. Back to IDLE: refused or gone. */
static void client_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
				 enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct client_state *state = user_data.ptr;
	doca_error_t result;

	(void)ctx;
	(void)prev_state;
	state->ctx_state = next_state;
	if (next_state == DOCA_CTX_STATE_RUNNING) {
		state->settled = true;
		result = doca_cc_client_get_connection(state->client, &state->connection);
		if (result != DOCA_SUCCESS) {
			fail("client", "the client runs without a connection", result);
			state->errors++;
			update_done(state);
			return;
		}
		send_next(state);
	} else if (next_state == DOCA_CTX_STATE_IDLE) {
		state->settled = true;
		state->done = true;
	}
}

/* The connection counted every message and byte each way. */
static void check_counters(struct client_state *state)
{
	uint64_t bytes = 0, value = 0;
	const struct {
		enum doca_cc_counter counter;
		const char *name;
		int is_bytes;
	} counters[] = {
		{DOCA_CC_COUNTER_SENT_MESSAGES, "sent messages", 0},
		{DOCA_CC_COUNTER_SENT_BYTES, "sent bytes", 1},
		{DOCA_CC_COUNTER_RECV_MESSAGES, "received messages", 0},
		{DOCA_CC_COUNTER_RECV_BYTES, "received bytes", 1},
	};
	doca_error_t result;

	for (int i = 0; i < NUM_MESSAGES; i++)
		bytes += state->msg_lens[i];
	result = doca_cc_connection_update_info(state->connection);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot update the connection's counters", result);
		state->errors++;
		return;
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint64_t expected = counters[i].is_bytes ? bytes : NUM_MESSAGES;

		result = doca_cc_connection_get_counter(state->connection, counters[i].counter, &value);
		if (result != DOCA_SUCCESS || value != expected) {
			fprintf(stderr, "%s: client: counter of %s is %lu (%s), expected %lu\n", program,
				counters[i].name, (unsigned long)value, doca_error_get_name(result),
				(unsigned long)expected);
			state->errors++;
		}
	}
}

/* Connects to the server `name`, exchanges the messages; returns the exit status. */
static int run_client(const char *name, struct client_state *state)
{
	struct doca_dev *dev = NULL;
	struct doca_pe *pe = NULL;
	struct doca_ctx *ctx;
	uint32_t max_msg_size = 0;
	doca_error_t result;
	int status = EXIT_FAILURE;

	for (int i = 0; i < NUM_MESSAGES; i++)
		state->msg_lens[i] = (uint32_t)snprintf(state->msgs[i], MSG_SIZE, "DOCA 2.5 Comm Channel message %d", i);

	result = open_device(CLIENT_PCI, doca_cc_cap_client_is_supported, &dev);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot open device " CLIENT_PCI, result);
		return EXIT_FAILURE;
	}
	result = doca_cc_cap_get_max_msg_size(doca_dev_as_devinfo(dev), &max_msg_size);
	if (result != DOCA_SUCCESS || max_msg_size < MSG_SIZE) {
		fprintf(stderr, "%s: client: messages of %d bytes do not fit (max %u)\n", program, MSG_SIZE,
			max_msg_size);
		goto close_dev;
	}
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot create a progress engine", result);
		goto close_dev;
	}
	result = doca_cc_client_create(dev, name, &state->client);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot create the client", result);
		goto destroy_pe;
	}
	ctx = doca_cc_client_as_ctx(state->client);
	result = doca_cc_client_task_send_set_conf(state->client, message_sent, message_sent, CLIENT_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_cc_client_event_msg_recv_register(state->client, echo_received);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = state});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, client_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot configure the client", result);
		goto destroy_client;
	}
	/* A client starts in the background: RUNNING arrives through client_state_changed. */
	result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS) {
		fail("client", "cannot start the client", result);
		goto destroy_client;
	}
	if (!progress_until(pe, &state->done, now_sec() + TIMEOUT_SEC)) {
		fprintf(stderr, "%s: client: %u of %d echoes within %d s\n", program, state->echoes, NUM_MESSAGES,
			TIMEOUT_SEC);
		state->errors++;
	} else if (state->ctx_state != DOCA_CTX_STATE_RUNNING) {
		fprintf(stderr, "%s: client: the connection to `%s` was refused or lost\n", program, name);
		state->errors++;
	} else {
		check_counters(state);
	}
	result = stop_ctx(pe, ctx);
	if (result != DOCA_SUCCESS) {
		fail("client", "cannot stop the client", result);
		state->errors++;
	}
	if (state->errors == 0 && state->matched == NUM_MESSAGES)
		status = EXIT_SUCCESS;
destroy_client:
	if (doca_cc_client_destroy(state->client) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
destroy_pe:
	if (doca_pe_destroy(pe) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
close_dev:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		status = EXIT_FAILURE;
	return status;
}

/* ==== Both ==== */

/* Waits for the server process; kills it if it is still there after TIMEOUT_SEC. */
static int wait_server(pid_t server)
{
	double deadline = now_sec() + TIMEOUT_SEC;
	const struct timespec nap = {.tv_sec = 0, .tv_nsec = 10000000};
	int wstatus = 0;

	for (;;) {
		pid_t got = waitpid(server, &wstatus, WNOHANG);

		if (got == server)
			return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EXIT_FAILURE;
		if (got < 0 && errno != EINTR)
			return EXIT_FAILURE;
		if (now_sec() > deadline) {
			fprintf(stderr, "%s: the server did not exit: killing it\n", program);
			kill(server, SIGKILL);
			waitpid(server, &wstatus, 0);
			return EXIT_FAILURE;
		}
		nanosleep(&nap, NULL);
	}
}

int main(void)
{
	static struct client_state client;
	char name[32];
	int ready[2];
	char byte = 0;
	struct pollfd pfd;
	pid_t server;
	int client_status = EXIT_FAILURE, server_status;

	/* A name of this run's own, so runs side by side do not meet. */
	snprintf(name, sizeof(name), "cc25-%ld", (long)getpid());
	if (pipe(ready) != 0) {
		perror("pipe");
		return EXIT_FAILURE;
	}
	fflush(NULL);
	server = fork();
	if (server < 0) {
		perror("fork");
		return EXIT_FAILURE;
	}
	if (server == 0) {
		close(ready[0]);
		_exit(run_server(name, ready[1]));
	}
	close(ready[1]);

	/* The server says when it listens (a client would also retry until then). */
	pfd = (struct pollfd){.fd = ready[0], .events = POLLIN};
	if (poll(&pfd, 1, TIMEOUT_SEC * 1000) == 1 && read(ready[0], &byte, 1) == 1 && byte == 'R')
		client_status = run_client(name, &client);
	else
		fprintf(stderr, "%s: the server did not start\n", program);
	close(ready[0]);
	server_status = wait_server(server);

	printf("%s: %u of %d echoes matched over doca_cc (%u sent, %u errors); client %s, server %s\n", program,
	       client.matched, NUM_MESSAGES, client.sent, client.errors,
	       client_status == EXIT_SUCCESS ? "passed" : "failed", server_status == EXIT_SUCCESS ? "passed" : "failed");
	return client_status == EXIT_SUCCESS && server_status == EXIT_SUCCESS ? EXIT_SUCCESS : EXIT_FAILURE;
}
