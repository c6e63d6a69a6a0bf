/*
 * The re-entrancy matrix of Comch (see reentrancy.h): every callback of the control path and the
 * fast path, on a client and on a server, crossed with every call a callback may make, each case
 * between two processes.
 *
 * The program is the side under test; it starts its peers itself, as two more processes of this
 * binary: a server its clients connect to, and a client that connects to its servers. The peers
 * answer the way a plain DOCA service would (they echo `ping`, ignore `quiet`, hold their engine
 * for a moment on `hold`, destroy their consumer on `expire`, a client stops on `bye`, and each
 * puts a consumer and a producer on every connection and sends one buffer to each consumer the
 * other side announces). They run until the side under test closes the pipe it gave them, and
 * must then exit 0. The side under test exits 0 only if every case passed.
 *
 *   reentrancy_comch [--role client|server] [--case N[-M]]
 *
 * It is written the way DOCA's samples are: a client's start answers IN_PROGRESS and RUNNING
 * comes through its state callback, consumers post their receives from their state callback once
 * RUNNING and repost them in their completion, tasks are freed in their callbacks.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(REENTRANCY_COMCH);

#include "reentrancy.h"
#include "reentrancy_endpoints.h"
#include "reentrancy_comch.h"

/* ---- The cases ---- */

struct cb_info {
	const char *client_name, *server_name;
	bool task;	     /* a task's callback */
	bool child;	     /* a fast-path endpoint's callback */
	bool connection;     /* the callback concerns a connection (a server may disconnect it) */
	bool server_only;
	bool client_only;
};

static const struct cb_info cb_infos[CB_COUNT] = {
	[CB_CTRL_STATE] = {"client: RUNNING", "server: RUNNING", false, false, false, false, false},
	[CB_CONNECT] = {NULL, "server: connection", false, false, true, true, false},
	[CB_DISCONNECT] = {NULL, "server: disconnection", false, false, true, true, false},
	[CB_RECV] = {"client: message", "server: message", false, false, true, false, false},
	[CB_SEND_DONE] = {"client: send done", "server: send done", true, false, true, false, false},
	[CB_SEND_ERR] = {"client: send failed", "server: send failed", true, false, true, false, false},
	[CB_CONSUMER_NEW] = {"client: new consumer", "server: new consumer", false, false, true, false, false},
	[CB_CONSUMER_EXPIRED] = {"client: consumer expired", "server: consumer expired", false, false, true, false,
				 false},
	[CB_FAST_C_STATE] = {"client: consumer RUNNING", "server: consumer RUNNING", false, true, true, false, false},
	[CB_FAST_P_STATE] = {"client: producer RUNNING", "server: producer RUNNING", false, true, true, false, false},
	[CB_FAST_RECV] = {"client: receive done", "server: receive done", true, true, true, false, false},
	[CB_FAST_RECV_ERR] = {"client: receive failed", "server: receive failed", true, true, true, false, false},
	[CB_FAST_SEND] = {"client: fast send done", "server: fast send done", true, true, true, false, false},
	[CB_FAST_SEND_ERR] = {"client: fast send failed", "server: fast send failed", true, true, true, false, false},
	[CB_CTRL_IDLE] = {"client: IDLE", "server: IDLE", false, false, false, false, false},
	[CB_FAST_C_IDLE] = {"client: consumer IDLE", "server: consumer IDLE", false, true, true, false, false},
	[CB_FAST_P_IDLE] = {"client: producer IDLE", "server: producer IDLE", false, true, true, false, false},
};

/* ---- The side under test ---- */

static struct tested tested;

static struct reent_site site_of(struct tested *t, struct reent_obj *self, struct doca_task *task)
{
	return (struct reent_site){
		.self = self,
		.sibling = &t->sibling,
		.parent = &t->ctrl,
		.pe = t->pe,
		.task = task,
		.in_progress = !t->in_call,
		.server = t->server_role ? t->ctrl.handle : NULL,
		.connection = t->conn,
		.connection_live = t->conn_live,
		.connection_has_endpoints = ep_pair_exists(&t->ep),
	};
}

/* Runs the case's action if this is its callback; whether the task is no longer the caller's. */
static bool hook(struct tested *t, enum cb cb, struct reent_obj *self, struct doca_task *task)
{
	struct reent_site s = site_of(t, self, task);

	return reent_hook(t->c, cb, &s) && t->c->task_consumed;
}

static struct tested *tested_of(struct doca_comch_connection *conn)
{
	(void)conn;
	return &tested;
}

static void ctrl_state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
			       enum doca_ctx_states next)
{
	struct tested *t = user_data.ptr;

	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_IDLE)
		hook(t, CB_CTRL_IDLE, &t->ctrl, NULL);
	if (next != DOCA_CTX_STATE_RUNNING)
		return;
	if (!t->server_role && doca_comch_client_get_connection(t->ctrl.handle, &t->conn) == DOCA_SUCCESS)
		t->conn_live = true;
	hook(t, CB_CTRL_STATE, &t->ctrl, NULL);
}

static void connected(struct doca_comch_event_connection_status_changed *event, struct doca_comch_connection *conn,
		      uint8_t ok)
{
	struct tested *t = tested_of(conn);

	(void)event;
	if (!ok || t->conn != NULL)
		return;
	t->conn = conn;
	t->conn_live = true;
	hook(t, CB_CONNECT, &t->ctrl, NULL);
}

static void disconnected(struct doca_comch_event_connection_status_changed *event, struct doca_comch_connection *conn,
			 uint8_t ok)
{
	struct tested *t = tested_of(conn);

	(void)event;
	(void)ok;
	if (conn != t->conn)
		return;
	t->conn_live = false;
	hook(t, CB_DISCONNECT, &t->ctrl, NULL);
	/* The handle is invalid once the callback returns. */
	t->conn = NULL;
}

static void message(struct doca_comch_event_msg_recv *event, uint8_t *buf, uint32_t len,
		    struct doca_comch_connection *conn)
{
	struct tested *t = tested_of(conn);

	(void)event;
	(void)buf;
	(void)len;
	t->echoes++;
	hook(t, CB_RECV, &t->ctrl, NULL);
}

static void ctrl_send_finished(struct doca_comch_task_send *task, union doca_data task_user_data,
			       union doca_data ctx_user_data, enum cb cb)
{
	struct tested *t = ctx_user_data.ptr;
	struct doca_task *doca_task = doca_comch_task_send_as_task(task);

	(void)task_user_data;
	t->ctrl_in_flight--;
	if (cb == CB_SEND_ERR)
		t->ctrl_send_errors++;
	if (!hook(t, cb, &t->ctrl, doca_task))
		doca_task_free(doca_task);
}

static void ctrl_send_done(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	ctrl_send_finished(task, task_user_data, ctx_user_data, CB_SEND_DONE);
}

static void ctrl_send_failed(struct doca_comch_task_send *task, union doca_data task_user_data,
			     union doca_data ctx_user_data)
{
	ctrl_send_finished(task, task_user_data, ctx_user_data, CB_SEND_ERR);
}

static void consumer_new(struct doca_comch_event_consumer *event, struct doca_comch_connection *conn, uint32_t id)
{
	struct tested *t = tested_of(conn);

	(void)event;
	t->ep.peer_consumer_id = id;
	hook(t, CB_CONSUMER_NEW, &t->ctrl, NULL);
}

static void consumer_expired(struct doca_comch_event_consumer *event, struct doca_comch_connection *conn, uint32_t id)
{
	struct tested *t = tested_of(conn);

	(void)event;
	if (id == t->ep.peer_consumer_id)
		t->ep.peer_consumer_id = 0;
	t->peer_consumer_gone = true;
	hook(t, CB_CONSUMER_EXPIRED, &t->ctrl, NULL);
}

static void fast_consumer_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
				enum doca_ctx_states next)
{
	struct tested *t = user_data.ptr;

	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_IDLE)
		hook(t, CB_FAST_C_IDLE, &t->ep.consumer, NULL);
	if (next != DOCA_CTX_STATE_RUNNING)
		return;
	hook(t, CB_FAST_C_STATE, &t->ep.consumer, NULL);
	/* As DOCA's samples do: the receives are posted once the consumer runs. */
	if (reent_state(&t->ep.consumer) == DOCA_CTX_STATE_RUNNING && ep_post_all(&t->ep) == DOCA_SUCCESS)
		t->posted = true;
}

static void fast_producer_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
				enum doca_ctx_states next)
{
	struct tested *t = user_data.ptr;

	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING)
		hook(t, CB_FAST_P_STATE, &t->ep.producer, NULL);
	else if (next == DOCA_CTX_STATE_IDLE)
		hook(t, CB_FAST_P_IDLE, &t->ep.producer, NULL);
}

static void fast_recv_finished(struct doca_comch_consumer_task_post_recv *recv, union doca_data ctx_user_data,
			       enum cb cb)
{
	struct tested *t = ctx_user_data.ptr;
	struct doca_task *task = doca_comch_consumer_task_post_recv_as_task(recv);

	if (cb == CB_FAST_RECV)
		t->ep.received++;
	if (hook(t, cb, &t->ep.consumer, task))
		return;
	/* Posted again while the consumer runs, as DOCA's samples do; freed once it stops. */
	if (cb == CB_FAST_RECV && reent_state(&t->ep.consumer) == DOCA_CTX_STATE_RUNNING) {
		doca_buf_reset_data_len(doca_comch_consumer_task_post_recv_get_buf(recv));
		if (doca_task_submit(task) == DOCA_SUCCESS)
			return;
	}
	doca_task_free(task);
}

static void fast_recv_done(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	(void)task_user_data;
	fast_recv_finished(task, ctx_user_data, CB_FAST_RECV);
}

static void fast_recv_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			     union doca_data ctx_user_data)
{
	(void)task_user_data;
	fast_recv_finished(task, ctx_user_data, CB_FAST_RECV_ERR);
}

static void fast_send_finished(struct doca_comch_producer_task_send *send, union doca_data task_user_data,
			       union doca_data ctx_user_data, enum cb cb)
{
	struct tested *t = ctx_user_data.ptr;
	struct doca_task *task = doca_comch_producer_task_send_as_task(send);

	if (cb == CB_FAST_SEND_ERR)
		t->ep.send_errors++;
	ep_send_finished(&t->ep, task_user_data);
	if (hook(t, cb, &t->ep.producer, task)) {
		/* Resubmitted: its buffer is in flight again (a destroyed producer took it back). */
		if (t->c->action == ACT_RESUBMIT_TASK && task_user_data.u64 < EP_BUFS)
			t->ep.free_sends &= ~(1u << task_user_data.u64);
		return;
	}
	doca_task_free(task);
}

static void fast_send_done(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	fast_send_finished(task, task_user_data, ctx_user_data, CB_FAST_SEND);
}

static void fast_send_failed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			     union doca_data ctx_user_data)
{
	fast_send_finished(task, task_user_data, ctx_user_data, CB_FAST_SEND_ERR);
}

static const struct ep_callbacks tested_ep_callbacks = {
	.recv_done = fast_recv_done,
	.recv_failed = fast_recv_failed,
	.send_done = fast_send_done,
	.send_failed = fast_send_failed,
	.consumer_state = fast_consumer_state,
	.producer_state = fast_producer_state,
};

static const struct ctrl_callbacks tested_ctrl_callbacks = {
	.state = ctrl_state_changed,
	.connected = connected,
	.disconnected = disconnected,
	.message = message,
	.send_done = ctrl_send_done,
	.send_failed = ctrl_send_failed,
	.consumer_new = consumer_new,
	.consumer_expired = consumer_expired,
};

/* ---- Driving one case ---- */

static bool ctrl_running(const struct tested *t)
{
	return reent_state(&t->ctrl) == DOCA_CTX_STATE_RUNNING;
}

/* Connected, or nothing more will come of this case's start. */
static bool settled_connection(void *arg)
{
	struct tested *t = arg;
	enum doca_ctx_states s = reent_state(&t->ctrl);

	return t->conn_live || (s != DOCA_CTX_STATE_RUNNING && s != DOCA_CTX_STATE_STARTING) || t->c->fired;
}

/* The endpoints are ready (receives posted, the peer's consumer known), or cannot be any more. */
static bool settled_endpoints(void *arg)
{
	struct tested *t = arg;

	if (!ctrl_running(t) || !t->conn_live || t->ep.consumer.handle == NULL || t->ep.producer.handle == NULL)
		return true;
	if (reent_state(&t->ep.consumer) != DOCA_CTX_STATE_RUNNING)
		return reent_state(&t->ep.consumer) != DOCA_CTX_STATE_STARTING;
	return t->posted && t->ep.peer_consumer_id != 0;
}

static bool fired(void *arg)
{
	const struct tested *t = arg;

	return t->c->fired;
}

static bool echoed(void *arg)
{
	const struct tested *t = arg;

	return t->echoes > 0 || !ctrl_running(t);
}

/* Sends a control message on the case's connection. */
static doca_error_t ctrl_send(struct tested *t, const char *text)
{
	struct doca_comch_task_send *task;
	doca_error_t result;

	result = t->server_role ? doca_comch_server_task_send_alloc_init(t->ctrl.handle, t->conn, text,
									  (uint32_t)strlen(text), &task) :
				  doca_comch_client_task_send_alloc_init(t->ctrl.handle, t->conn, text,
									  (uint32_t)strlen(text), &task);
	if (result != DOCA_SUCCESS)
		return result;
	result = doca_task_submit(doca_comch_task_send_as_task(task));
	if (result != DOCA_SUCCESS)
		doca_task_free(doca_comch_task_send_as_task(task));
	else
		t->ctrl_in_flight++;
	return result;
}

/* Stops `o` as the program (not a callback): its state callbacks may run inside the call. */
static void stop_from_program(struct tested *t, struct reent_obj *o)
{
	if (o->handle == NULL)
		return;
	t->in_call = true;
	doca_ctx_stop(o->ctx);
	t->in_call = false;
}

/* Makes the case's callback run. */
static void trigger(struct tested *t)
{
	enum cb cb = t->c->cb;

	if (t->c->fired || !ctrl_running(t) || !t->conn_live)
		return;
	switch (cb) {
	case CB_RECV:
		ctrl_send(t, "ping");
		break;
	case CB_SEND_DONE:
		ctrl_send(t, "quiet");
		break;
	case CB_SEND_ERR:
		/* Control messages go through the peer's ring once a round trip showed it is up. The
		 * peer holds its engine on `hold`: the ring fills and the next sends wait for room,
		 * and a stop ends those with an error. */
		ctrl_send(t, "ping");
		reent_progress_until(t->pe, echoed, t);
		ctrl_send(t, "hold");
		for (int i = 0; i < CTRL_FLOOD; i++)
			ctrl_send(t, "quiet");
		stop_from_program(t, &t->ctrl);
		break;
	case CB_CTRL_IDLE:
		stop_from_program(t, &t->ctrl);
		break;
	case CB_CONSUMER_EXPIRED:
		ctrl_send(t, "expire");
		break;
	case CB_DISCONNECT:
		ctrl_send(t, "bye");
		break;
	case CB_FAST_RECV_ERR:
	case CB_FAST_C_IDLE:
		stop_from_program(t, &t->ep.consumer);
		break;
	case CB_FAST_P_IDLE:
		stop_from_program(t, &t->ep.producer);
		break;
	case CB_FAST_SEND:
		ep_send(&t->ep, 64);
		break;
	case CB_FAST_SEND_ERR:
		/* More than the peer's receive buffers hold. */
		ep_send(&t->ep, EP_SEND_SIZE);
		break;
	default:
		/* State changes, connections, new consumers and receives come by themselves. */
		break;
	}
}

static bool run_case(struct tested *t, struct reent_case *c, const struct devices *d)
{
	bool ok;

	memset(t, 0, sizeof(*t));
	t->c = c;
	t->server_role = c->server_role;
	if (doca_pe_create(&t->pe) != DOCA_SUCCESS) {
		reent_fail(c, "doca_pe_create", DOCA_ERROR_UNKNOWN);
		return reent_report(c, c->index);
	}
	if (sibling_create(t, d) != DOCA_SUCCESS)
		reent_fail(c, "creating the sibling server", DOCA_ERROR_UNKNOWN);
	else if (ctrl_create(t, d, &tested_ctrl_callbacks) != DOCA_SUCCESS)
		reent_fail(c, "creating the context under test", DOCA_ERROR_UNKNOWN);
	if (!c->failed && !reent_progress_until(t->pe, settled_connection, t))
		reent_fail(c, "no connection", DOCA_ERROR_TIME_OUT);
	/* Producers and consumers on the connection, except where the context must stop (it cannot
	 * while they exist). */
	if (!c->failed && c->cb != CB_SEND_ERR && c->cb != CB_CTRL_IDLE && ctrl_running(t) && t->conn_live) {
		union doca_data me = {.ptr = t};
		doca_error_t result;

		t->in_call = true;
		result = ep_pair_create(&t->ep, t->dev, t->pe, t->conn, &tested_ep_callbacks, me);
		t->in_call = false;
		if (result != DOCA_SUCCESS && !c->fired)
			reent_fail(c, "creating the consumer and producer", result);
		if (!reent_progress_until(t->pe, settled_endpoints, t))
			reent_fail(c, "the endpoints did not settle", DOCA_ERROR_TIME_OUT);
	}
	if (!c->failed) {
		trigger(t);
		if (!reent_progress_until(t->pe, fired, t))
			reent_fail(c, "waiting for the callback", DOCA_ERROR_TIME_OUT);
		reent_settle(t->pe, SETTLE_PASSES);
	}
	/* DOCA's teardown order: endpoints, then their server or client, then the rest. */
	reent_teardown(c, t->pe, &t->ep.producer);
	reent_teardown(c, t->pe, &t->ep.consumer);
	if (!ep_pair_free_memory(&t->ep))
		reent_fail(c, "freeing the endpoints' memory", DOCA_ERROR_UNKNOWN);
	reent_teardown(c, t->pe, &t->ctrl);
	reent_teardown(c, t->pe, &t->sibling);
	if (doca_pe_destroy(t->pe) != DOCA_SUCCESS)
		reent_fail(c, "destroying the PE at the end", DOCA_ERROR_IN_USE);
	ok = reent_report(c, c->index);
	return ok;
}

/* ---- Main ---- */

int main(int argc, char **argv)
{
	struct options o = {.role = -1};
	struct devices d = {0};
	struct peer_process peers[2] = {0};
	int passed = 0, failed = 0, index = 0;
	bool peers_ok = true;

	if (parse_options(argc, argv, &o) != 0)
		return EXIT_FAILURE;
	if (doca_log_backend_create_standard() != DOCA_SUCCESS)
		return EXIT_FAILURE;
	if (o.peer_role >= 0)
		return run_peer(&o);

	/* The peers start before this process makes any DOCA object. */
	if (spawn_peer(argv[0], "server", &peers[0]) != 0 || spawn_peer(argv[0], "client", &peers[1]) != 0)
		return EXIT_FAILURE;
	if (open_devices(&d) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	for (int role = 0; role < 2; role++) {
		for (int cb = 0; cb < CB_COUNT; cb++) {
			const struct cb_info *info = &cb_infos[cb];

			if ((role == 1 && info->client_only) || (role == 0 && info->server_only))
				continue;
			for (int a = 0; a < ACT_COUNT; a++) {
				struct reent_case c = {.cb = cb, .action = (enum reent_action)a};

				if (!reent_applies(c.action, info->task, info->child, role == 1 && info->connection))
					continue;
				index++;
				if ((o.role >= 0 && o.role != role) ||
				    (o.first_case > 0 && (index < o.first_case || index > o.last_case)))
					continue;
				c.cb_name = role == 1 ? info->server_name : info->client_name;
				c.server_role = role == 1;
				c.index = index;
				if (run_case(&tested, &c, &d))
					passed++;
				else
					failed++;
			}
		}
	}
	close_devices(&d);
	for (int i = 0; i < 2; i++)
		peers_ok &= finish_peer(&peers[i]);
	printf("reentrancy_comch: %d cases passed, %d failed; peers %s\n", passed, failed,
	       peers_ok ? "exited cleanly" : "FAILED");
	return failed == 0 && peers_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
