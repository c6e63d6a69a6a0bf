/*
 * What reentrancy_comch.c's side under test and its peers share: the callbacks of the matrix,
 * devices, creating the Comch contexts, options, and starting and ending the peer processes.
 * Included once, after reentrancy_endpoints.h.
 */
#ifndef DPAKIT_TESTS_REENTRANCY_COMCH_H
#define DPAKIT_TESTS_REENTRANCY_COMCH_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define HOST_PCI "b1:00.0"
#define ARM_PCI "03:00.0"
#define CTRL_SEND_TASKS 16
#define CTRL_FLOOD 12	       /* sends past the peer's one-slot ring */
#define PEER_RECV_QUEUE 1      /* the peers' control ring: one slot */
#define PEER_HOLD_USEC 30000   /* how long a peer holds its engine on `hold` */
#define SETTLE_PASSES 50       /* progress after the action ran, before the teardown */
#define PEER_EXIT_TIMEOUT_SEC 30.0

/* The callbacks of the matrix. */
enum cb {
	CB_CTRL_STATE,	     /* the server or client becomes RUNNING */
	CB_CONNECT,	     /* server: a client connected */
	CB_DISCONNECT,	     /* server: a client disconnected */
	CB_RECV,	     /* a control message arrived */
	CB_SEND_DONE,	     /* a control send completed */
	CB_SEND_ERR,	     /* a control send failed */
	CB_CONSUMER_NEW,     /* the peer created a consumer */
	CB_CONSUMER_EXPIRED, /* the peer destroyed its consumer */
	CB_FAST_C_STATE,     /* the consumer becomes RUNNING */
	CB_FAST_P_STATE,     /* the producer becomes RUNNING (inside its doca_ctx_start) */
	CB_FAST_RECV,	     /* a posted receive completed */
	CB_FAST_RECV_ERR,    /* a posted receive was flushed by a stop */
	CB_FAST_SEND,	     /* a fast-path send completed */
	CB_FAST_SEND_ERR,    /* a fast-path send failed (too big for the peer's buffers) */
	CB_CTRL_IDLE,	     /* the server or client becomes IDLE (the program stopped it) */
	CB_FAST_C_IDLE,	     /* the consumer becomes IDLE (the program stopped it) */
	CB_FAST_P_IDLE,	     /* the producer becomes IDLE (inside the program's doca_ctx_stop) */
	CB_COUNT
};

struct devices {
	struct doca_dev *host;	  /* the client's */
	struct doca_dev *arm;	  /* the server's */
	struct doca_dev_rep *rep; /* the host function's representor, on the Arm side */
};

/* The side under test in one case. */
struct tested {
	struct reent_case *c;
	bool server_role;
	bool in_call; /* inside a doca_ctx_start or _stop the program made (not progress) */
	struct doca_pe *pe;
	struct doca_dev *dev;
	struct reent_obj ctrl, sibling;
	struct doca_comch_connection *conn;
	bool conn_live;
	struct ep_pair ep;
	bool posted;
	bool peer_consumer_gone;
	int echoes, ctrl_in_flight, ctrl_send_errors;
};

struct ctrl_callbacks {
	doca_ctx_state_changed_callback_t state;
	doca_comch_event_connection_status_changed_cb_t connected, disconnected;
	doca_comch_event_msg_recv_cb_t message;
	doca_comch_task_send_completion_cb_t send_done, send_failed;
	doca_comch_event_consumer_cb_t consumer_new, consumer_expired;
};

struct options {
	int role;	/* -1: both; 0: client; 1: server */
	int first_case, last_case; /* the cases to run (--case N or N-M); 0: all */
	int peer_role;	/* -1: the side under test; 0: peer server; 1: peer client */
	pid_t tested_pid;
	int pipe_fd;
};

/* ---- Devices ---- */

static inline doca_error_t open_by_pci(const char *pci, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n = 0;
	doca_error_t result = doca_devinfo_create_list(&list, &n);

	if (result != DOCA_SUCCESS)
		return result;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], pci, &equal) == DOCA_SUCCESS && equal) {
			result = doca_dev_open(list[i], dev);
			break;
		}
	}
	doca_devinfo_destroy_list(list);
	return result;
}

static inline doca_error_t open_rep(struct doca_dev *dev, const char *pci, struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **list;
	uint32_t n = 0;
	doca_error_t result = doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &list, &n);

	if (result != DOCA_SUCCESS)
		return result;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_rep_is_equal_pci_addr(list[i], pci, &equal) == DOCA_SUCCESS && equal) {
			result = doca_dev_rep_open(list[i], rep);
			break;
		}
	}
	doca_devinfo_rep_destroy_list(list);
	return result;
}

static inline doca_error_t open_devices(struct devices *d)
{
	doca_error_t result = open_by_pci(HOST_PCI, &d->host);

	if (result == DOCA_SUCCESS)
		result = open_by_pci(ARM_PCI, &d->arm);
	if (result == DOCA_SUCCESS)
		result = open_rep(d->arm, HOST_PCI, &d->rep);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot open the devices: %s", doca_error_get_descr(result));
	return result;
}

static inline void close_devices(struct devices *d)
{
	if (d->rep != NULL && doca_dev_rep_close(d->rep) != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot close the representor");
	if (d->arm != NULL && doca_dev_close(d->arm) != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot close the Arm device");
	if (d->host != NULL && doca_dev_close(d->host) != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot close the host device");
}

/* ---- Comch contexts ---- */

static inline doca_error_t destroy_server(void *handle)
{
	return doca_comch_server_destroy(handle);
}

static inline doca_error_t destroy_client(void *handle)
{
	return doca_comch_client_destroy(handle);
}

/* The name the side under test (pid) serves under, or its peer server serves it under. */
static inline void service_name(char *buf, size_t size, bool tested_is_server, pid_t tested_pid)
{
	snprintf(buf, size, "reent-%s-%ld", tested_is_server ? "srv" : "cli", (long)tested_pid);
}

static inline void sibling_send(struct doca_comch_task_send *task, union doca_data task_user_data,
				union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static inline void sibling_message(struct doca_comch_event_msg_recv *event, uint8_t *buf, uint32_t len,
				   struct doca_comch_connection *conn)
{
	(void)event;
	(void)buf;
	(void)len;
	(void)conn;
}

static inline void sibling_connection(struct doca_comch_event_connection_status_changed *event,
				      struct doca_comch_connection *conn, uint8_t ok)
{
	(void)event;
	(void)conn;
	(void)ok;
}

/*
 * A Comch server, configured and started on `pe` (RUNNING at once): `cbs` may leave out the state
 * and consumer callbacks.
 */
static inline doca_error_t server_create(const struct devices *d, struct doca_pe *pe, const char *name,
					 uint32_t recv_queue, const struct ctrl_callbacks *cbs,
					 union doca_data user_data, struct reent_obj *o, bool *in_call)
{
	struct doca_comch_server *server;
	doca_error_t result = doca_comch_server_create(d->arm, d->rep, name, &server);

	if (result != DOCA_SUCCESS)
		return result;
	*o = (struct reent_obj){.name = "server", .handle = server, .ctx = doca_comch_server_as_ctx(server),
				.destroy = destroy_server, .is_parent = true};
	result = doca_comch_server_task_send_set_conf(server, cbs->send_done, cbs->send_failed, CTRL_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_msg_recv_register(server, cbs->message);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_connection_status_changed_register(server, cbs->connected,
										    cbs->disconnected);
	if (result == DOCA_SUCCESS && cbs->consumer_new != NULL)
		result = doca_comch_server_event_consumer_register(server, cbs->consumer_new, cbs->consumer_expired);
	if (result == DOCA_SUCCESS && recv_queue != 0)
		result = doca_comch_server_set_recv_queue_size(server, recv_queue);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(o->ctx, user_data);
	if (result == DOCA_SUCCESS && cbs->state != NULL)
		result = doca_ctx_set_state_changed_cb(o->ctx, cbs->state);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, o->ctx);
	if (result == DOCA_SUCCESS) {
		if (in_call != NULL)
			*in_call = true;
		result = doca_ctx_start(o->ctx);
		if (in_call != NULL)
			*in_call = false;
	}
	return result;
}

/* A Comch client of `name`, configured and started on `pe`: its start answers IN_PROGRESS. */
static inline doca_error_t client_create(const struct devices *d, struct doca_pe *pe, const char *name,
					 uint32_t recv_queue, const struct ctrl_callbacks *cbs,
					 union doca_data user_data, struct reent_obj *o)
{
	struct doca_comch_client *client;
	doca_error_t result = doca_comch_client_create(d->host, name, &client);

	if (result != DOCA_SUCCESS)
		return result;
	*o = (struct reent_obj){.name = "client", .handle = client, .ctx = doca_comch_client_as_ctx(client),
				.destroy = destroy_client, .is_parent = true};
	result = doca_comch_client_task_send_set_conf(client, cbs->send_done, cbs->send_failed, CTRL_SEND_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_msg_recv_register(client, cbs->message);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_consumer_register(client, cbs->consumer_new, cbs->consumer_expired);
	if (result == DOCA_SUCCESS && recv_queue != 0)
		result = doca_comch_client_set_recv_queue_size(client, recv_queue);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(o->ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(o->ctx, cbs->state);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, o->ctx);
	if (result == DOCA_SUCCESS) {
		result = doca_ctx_start(o->ctx);
		if (result == DOCA_ERROR_IN_PROGRESS)
			result = DOCA_SUCCESS;
		else if (result == DOCA_SUCCESS)
			result = DOCA_ERROR_UNEXPECTED; /* DOCA's client connects through progress */
	}
	return result;
}

/* The other context on the case's engine: a server of its own name, without clients. */
static inline doca_error_t sibling_create(struct tested *t, const struct devices *d)
{
	static const struct ctrl_callbacks cbs = {
		.connected = sibling_connection,
		.disconnected = sibling_connection,
		.message = sibling_message,
		.send_done = sibling_send,
		.send_failed = sibling_send,
	};
	char name[64];

	snprintf(name, sizeof(name), "reent-sibling-%ld", (long)getpid());
	return server_create(d, t->pe, name, 0, &cbs, (union doca_data){.ptr = NULL}, &t->sibling, NULL);
}

/* Producers or consumers on a connection that is still up: they keep its server or client from
 * stopping (those of a connection that went do not). */
static inline bool endpoints_on_live_connection(const void *arg)
{
	const struct tested *t = arg;

	return t->conn_live && ep_pair_exists(&t->ep);
}

/* The context under test: a client of the peer server, or a server for the peer client. */
static inline doca_error_t ctrl_create(struct tested *t, const struct devices *d, const struct ctrl_callbacks *cbs)
{
	union doca_data me = {.ptr = t};
	char name[64];
	doca_error_t result;

	service_name(name, sizeof(name), t->server_role, getpid());
	t->dev = t->server_role ? d->arm : d->host;
	result = t->server_role ? server_create(d, t->pe, name, 0, cbs, me, &t->ctrl, &t->in_call) :
				  client_create(d, t->pe, name, 0, cbs, me, &t->ctrl);
	t->ctrl.has_children = endpoints_on_live_connection;
	t->ctrl.children_arg = t;
	return result;
}

/* ---- Options ---- */

static inline int parse_options(int argc, char **argv, struct options *o)
{
	o->peer_role = -1;
	o->pipe_fd = -1;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (value == NULL) {
			fprintf(stderr, "%s takes a value\n", arg);
			return -1;
		}
		if (strcmp(arg, "--role") == 0 && strcmp(value, "client") == 0)
			o->role = 0;
		else if (strcmp(arg, "--role") == 0 && strcmp(value, "server") == 0)
			o->role = 1;
		else if (strcmp(arg, "--case") == 0 && sscanf(value, "%d-%d", &o->first_case, &o->last_case) == 2)
			;
		else if (strcmp(arg, "--case") == 0)
			o->first_case = o->last_case = atoi(value);
		else if (strcmp(arg, "--peer") == 0)
			o->peer_role = strcmp(value, "server") == 0 ? 0 : 1;
		else if (strcmp(arg, "--tested-pid") == 0)
			o->tested_pid = (pid_t)atol(value);
		else if (strcmp(arg, "--pipe") == 0)
			o->pipe_fd = atoi(value);
		else {
			fprintf(stderr, "usage: %s [--role client|server] [--case N[-M]]\n", argv[0]);
			return -1;
		}
		i++;
	}
	return 0;
}

/* ---- Peer processes ---- */

struct peer_process {
	pid_t pid;
	int pipe_fd; /* closing it tells the peer to finish */
	const char *role;
};

/* Starts this binary as a peer (`server` or `client`) of this process. */
static inline int spawn_peer(const char *self, const char *role, struct peer_process *p)
{
	int fds[2];
	char tested_pid[24], pipe_fd[16];

	if (pipe(fds) != 0) {
		perror("pipe");
		return -1;
	}
	snprintf(tested_pid, sizeof(tested_pid), "%ld", (long)getpid());
	snprintf(pipe_fd, sizeof(pipe_fd), "%d", fds[0]);
	fflush(NULL);
	p->pid = fork();
	if (p->pid < 0) {
		perror("fork");
		return -1;
	}
	if (p->pid == 0) {
		char *args[] = {(char *)self, "--peer",	 (char *)role, "--tested-pid", tested_pid,
				"--pipe",     pipe_fd, NULL};

		close(fds[1]);
		execv(self, args);
		perror("execv");
		_exit(127);
	}
	close(fds[0]);
	/* Not inherited by the other peer: only this process's exit or close ends this one. */
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	p->pipe_fd = fds[1];
	p->role = role;
	return 0;
}

/* Tells the peer to finish and waits for it; whether it exited 0. */
static inline bool finish_peer(struct peer_process *p)
{
	double deadline = reent_now() + PEER_EXIT_TIMEOUT_SEC;
	int status = 0;

	close(p->pipe_fd);
	for (;;) {
		pid_t done = waitpid(p->pid, &status, WNOHANG);

		if (done == p->pid)
			break;
		if (done < 0 || reent_now() > deadline) {
			fprintf(stderr, "the peer %s did not exit: killed\n", p->role);
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			return false;
		}
		usleep(10000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "the peer %s failed (wait status %#x)\n", p->role, status);
		return false;
	}
	return true;
}

/* Whether the side under test closed the peer's pipe. */
static inline bool told_to_finish(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) > 0;
}

#include "reentrancy_peer.h"

#endif /* DPAKIT_TESTS_REENTRANCY_COMCH_H */
