/*
 * The peers of reentrancy_comch.c: plain Comch services the side under test talks to while its
 * callbacks tear things down. A peer server serves the clients under test one connection after
 * another; a peer client connects to each server under test in turn. On every connection a peer
 * puts a consumer and a producer, sends one buffer to each consumer the other side announces,
 * echoes `ping`, ignores `quiet`, holds its engine on `hold`, destroys its consumer on `expire`
 * and (a client) stops on `bye`. It runs until the side under test closes its pipe; it exits 0
 * if its own teardown got SUCCESS throughout, whatever the other side did.
 */
#ifndef DPAKIT_TESTS_REENTRANCY_PEER_H
#define DPAKIT_TESTS_REENTRANCY_PEER_H

#define PEER_MAX_CONNS 8

/* A connection of the peer. */
struct peer_conn {
	struct doca_comch_connection *conn; /* NULL: the record is free */
	bool live;
	bool endpoints_made;
	bool expire; /* destroy the consumer (`expire`) */
	bool bye;    /* a client stops (`bye`) */
	bool sent;   /* one buffer sent to the other side's current consumer */
	struct ep_pair ep;
};

struct peer {
	bool is_server;
	struct devices d;
	struct doca_pe *pe;
	struct reent_obj ctrl;
	struct peer_conn conns[PEER_MAX_CONNS];
	int failures;
};

static struct peer the_peer;

static struct peer_conn *peer_conn_of(struct doca_comch_connection *conn)
{
	for (int i = 0; i < PEER_MAX_CONNS; i++) {
		if (the_peer.conns[i].conn == conn)
			return &the_peer.conns[i];
	}
	return NULL;
}

static struct peer_conn *peer_conn_add(struct doca_comch_connection *conn)
{
	struct peer_conn *rec = peer_conn_of(NULL);

	if (rec != NULL) {
		memset(rec, 0, sizeof(*rec));
		rec->conn = conn;
		rec->live = true;
	}
	return rec;
}

static void peer_connected(struct doca_comch_event_connection_status_changed *event,
			   struct doca_comch_connection *conn, uint8_t ok)
{
	(void)event;
	if (ok)
		peer_conn_add(conn);
}

static void peer_disconnected(struct doca_comch_event_connection_status_changed *event,
			      struct doca_comch_connection *conn, uint8_t ok)
{
	struct peer_conn *rec = peer_conn_of(conn);

	(void)event;
	(void)ok;
	if (rec != NULL)
		rec->live = false;
}

static void peer_reply(struct doca_comch_connection *conn, const char *text)
{
	struct doca_comch_task_send *task;
	doca_error_t result;

	result = the_peer.is_server ?
			 doca_comch_server_task_send_alloc_init(the_peer.ctrl.handle, conn, text, (uint32_t)strlen(text),
								&task) :
			 doca_comch_client_task_send_alloc_init(the_peer.ctrl.handle, conn, text, (uint32_t)strlen(text),
								&task);
	if (result == DOCA_SUCCESS && doca_task_submit(doca_comch_task_send_as_task(task)) != DOCA_SUCCESS)
		doca_task_free(doca_comch_task_send_as_task(task));
}

static void peer_message(struct doca_comch_event_msg_recv *event, uint8_t *buf, uint32_t len,
			 struct doca_comch_connection *conn)
{
	struct peer_conn *rec = peer_conn_of(conn);

	(void)event;
	if (len == 4 && memcmp(buf, "ping", 4) == 0)
		peer_reply(conn, "ping");
	else if (len == 4 && memcmp(buf, "hold", 4) == 0)
		usleep(PEER_HOLD_USEC);
	else if (len == 6 && memcmp(buf, "expire", 6) == 0 && rec != NULL)
		rec->expire = true;
	else if (len == 3 && memcmp(buf, "bye", 3) == 0 && rec != NULL)
		rec->bye = true;
}

static void peer_task_done(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void peer_consumer_event(struct doca_comch_event_consumer *event, struct doca_comch_connection *conn,
				uint32_t id, bool created)
{
	struct peer_conn *rec = peer_conn_of(conn);

	(void)event;
	if (rec == NULL)
		return;
	if (created) {
		rec->ep.peer_consumer_id = id;
		rec->sent = false;
	} else if (rec->ep.peer_consumer_id == id) {
		rec->ep.peer_consumer_id = 0;
	}
}

static void peer_consumer_new(struct doca_comch_event_consumer *event, struct doca_comch_connection *conn, uint32_t id)
{
	peer_consumer_event(event, conn, id, true);
}

static void peer_consumer_expired(struct doca_comch_event_consumer *event, struct doca_comch_connection *conn,
				  uint32_t id)
{
	peer_consumer_event(event, conn, id, false);
}

static void peer_client_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
			      enum doca_ctx_states next)
{
	struct doca_comch_connection *conn;

	(void)user_data;
	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING && !the_peer.is_server &&
	    doca_comch_client_get_connection(the_peer.ctrl.handle, &conn) == DOCA_SUCCESS)
		peer_conn_add(conn);
}

static void peer_recv(struct doca_comch_consumer_task_post_recv *recv, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	struct ep_pair *ep = ctx_user_data.ptr;
	struct doca_task *task = doca_comch_consumer_task_post_recv_as_task(recv);

	(void)task_user_data;
	ep->received++;
	if (reent_state(&ep->consumer) == DOCA_CTX_STATE_RUNNING) {
		doca_buf_reset_data_len(doca_comch_consumer_task_post_recv_get_buf(recv));
		if (doca_task_submit(task) == DOCA_SUCCESS)
			return;
	}
	doca_task_free(task);
}

static void peer_recv_failed(struct doca_comch_consumer_task_post_recv *recv, union doca_data task_user_data,
			     union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_consumer_task_post_recv_as_task(recv));
}

static void peer_sent(struct doca_comch_producer_task_send *send, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	ep_send_finished(ctx_user_data.ptr, task_user_data);
	doca_task_free(doca_comch_producer_task_send_as_task(send));
}

static void peer_consumer_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
				enum doca_ctx_states next)
{
	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING)
		ep_post_all(user_data.ptr);
}

static void peer_producer_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
				enum doca_ctx_states next)
{
	(void)user_data;
	(void)ctx;
	(void)prev;
	(void)next;
}

static const struct ep_callbacks peer_ep_callbacks = {
	.recv_done = peer_recv,
	.recv_failed = peer_recv_failed,
	.send_done = peer_sent,
	.send_failed = peer_sent,
	.consumer_state = peer_consumer_state,
	.producer_state = peer_producer_state,
};

static const struct ctrl_callbacks peer_ctrl_callbacks = {
	.state = peer_client_state,
	.connected = peer_connected,
	.disconnected = peer_disconnected,
	.message = peer_message,
	.send_done = peer_task_done,
	.send_failed = peer_task_done,
	.consumer_new = peer_consumer_new,
	.consumer_expired = peer_consumer_expired,
};

/* Stops and destroys an endpoint of the peer; a failure counts against the peer. */
static void peer_end(struct reent_obj *o)
{
	struct reent_case scratch = {0};

	reent_teardown(&scratch, the_peer.pe, o);
	if (scratch.failed) {
		DOCA_LOG_ERR("peer: %s", scratch.why);
		the_peer.failures++;
	}
}

static void peer_end_connection(struct peer_conn *rec)
{
	peer_end(&rec->ep.producer);
	peer_end(&rec->ep.consumer);
	if (rec->endpoints_made && !ep_pair_free_memory(&rec->ep))
		the_peer.failures++;
	rec->conn = NULL;
}

/* What each connection needs now: endpoints made, a consumer expired, a buffer sent, an end. */
static void peer_tend(void)
{
	for (int i = 0; i < PEER_MAX_CONNS; i++) {
		struct peer_conn *rec = &the_peer.conns[i];

		if (rec->conn == NULL)
			continue;
		if (rec->live && !rec->endpoints_made) {
			rec->endpoints_made = true;
			/* The connection may close meanwhile: what was made is torn down with it. */
			ep_pair_create(&rec->ep, the_peer.is_server ? the_peer.d.arm : the_peer.d.host, the_peer.pe,
				       rec->conn, &peer_ep_callbacks, (union doca_data){.ptr = &rec->ep});
		}
		if (rec->expire) {
			rec->expire = false;
			peer_end(&rec->ep.consumer);
		}
		if (rec->live && !rec->sent && rec->ep.peer_consumer_id != 0 &&
		    reent_state(&rec->ep.producer) == DOCA_CTX_STATE_RUNNING && ep_send(&rec->ep, 64) == DOCA_SUCCESS)
			rec->sent = true;
		if (!rec->live || rec->bye)
			peer_end_connection(rec);
	}
}

/* Not finishing a stop of its own (the server went): ready for peer_end. */
static bool peer_client_settled(void *arg)
{
	(void)arg;
	return reent_state(&the_peer.ctrl) != DOCA_CTX_STATE_STOPPING;
}

/* A peer client: one client after another, each connected to the server under test until it goes. */
static void peer_client_loop(const struct options *o)
{
	char name[64];

	service_name(name, sizeof(name), true, o->tested_pid);
	while (!told_to_finish(o->pipe_fd)) {
		bool bye = false;

		if (client_create(&the_peer.d, the_peer.pe, name, PEER_RECV_QUEUE, &peer_ctrl_callbacks,
				  (union doca_data){.ptr = NULL}, &the_peer.ctrl) != DOCA_SUCCESS) {
			the_peer.failures++;
			return;
		}
		/* Connecting, until a server under test is there (or the side under test is done). */
		while (reent_state(&the_peer.ctrl) == DOCA_CTX_STATE_STARTING && !told_to_finish(o->pipe_fd)) {
			if (doca_pe_progress(the_peer.pe) == 0)
				usleep(1000);
		}
		while (reent_state(&the_peer.ctrl) == DOCA_CTX_STATE_RUNNING && !bye &&
		       !told_to_finish(o->pipe_fd)) {
			if (doca_pe_progress(the_peer.pe) == 0)
				usleep(100);
			bye = the_peer.conns[0].bye;
			peer_tend();
		}
		/* The server went, said `bye`, or the test is over: endpoints first, then the client. */
		for (int i = 0; i < PEER_MAX_CONNS; i++) {
			if (the_peer.conns[i].conn != NULL)
				peer_end_connection(&the_peer.conns[i]);
		}
		reent_progress_until(the_peer.pe, peer_client_settled, NULL);
		peer_end(&the_peer.ctrl);
	}
}

/* A peer server: serves every client under test until the side under test is done. */
static void peer_server_loop(const struct options *o)
{
	char name[64];

	service_name(name, sizeof(name), false, o->tested_pid);
	if (server_create(&the_peer.d, the_peer.pe, name, PEER_RECV_QUEUE, &peer_ctrl_callbacks,
			  (union doca_data){.ptr = NULL}, &the_peer.ctrl, NULL) != DOCA_SUCCESS) {
		the_peer.failures++;
		return;
	}
	while (!told_to_finish(o->pipe_fd)) {
		if (doca_pe_progress(the_peer.pe) == 0)
			usleep(100);
		peer_tend();
	}
	for (int i = 0; i < PEER_MAX_CONNS; i++) {
		if (the_peer.conns[i].conn != NULL)
			peer_end_connection(&the_peer.conns[i]);
	}
	peer_end(&the_peer.ctrl);
}

static int run_peer(const struct options *o)
{
	the_peer.is_server = o->peer_role == 0;
	if (open_devices(&the_peer.d) != DOCA_SUCCESS || doca_pe_create(&the_peer.pe) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	if (the_peer.is_server)
		peer_server_loop(o);
	else
		peer_client_loop(o);
	if (doca_pe_destroy(the_peer.pe) != DOCA_SUCCESS)
		the_peer.failures++;
	close_devices(&the_peer.d);
	if (the_peer.failures != 0)
		DOCA_LOG_ERR("peer %s: %d failures", the_peer.is_server ? "server" : "client", the_peer.failures);
	return the_peer.failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* DPAKIT_TESTS_REENTRANCY_PEER_H */
