/*
 * A sync event shared across PCIe, written as DOCA's remote PCI sync event samples are: one
 * program, built for the host from the host's prefix and for the BlueField's Arm from the Arm's
 * (DOCA_ARCH_DPU picks the side), run once on each side.
 *
 * The host creates two events with publisher remote_pci and subscriber cpu(dev): one started
 * with doca_sync_event_start, used with the synchronous calls, and one used as a DOCA context,
 * with tasks. It exports both (doca_sync_event_export_to_remote_pci) and sends the blobs to the
 * DPU over Comch (the DPU is the server, the host its client). The DPU imports them
 * (doca_sync_event_create_from_export); then for COUNT rounds each side in turn adds 1 and waits
 * for the other's addition: update_add and wait_eq_yield on the first event, notify_add and
 * wait_eq tasks on the second. Each side checks every value, and misuse is answered with DOCA's
 * codes. Exits non-zero if anything differs.
 *
 *   host: ./sync_event_remote [-c COUNT]    DPU: ./sync_event_remote [-c COUNT] (started first)
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_sync_event.h>
#include <doca_types.h>

DOCA_LOG_REGISTER(SYNC_EVENT_REMOTE);

#define SERVER_NAME "dpakit_sync_event_remote"
#define HOST_PCI "b1:00.0"
#define DPU_PCI "03:00.0"
#define TIMEOUT_SEC 30
#define MAX_BLOB 1024
#define NUM_TASKS 4
#define HANG_LIMIT_SEC 300

static int failures;

#define CHECK(call, code)                                                                          \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			DOCA_LOG_ERR("line %d: %s returned %s, expected %s", __LINE__, #call,      \
				     doca_error_get_name(got_), doca_error_get_name(code));        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			DOCA_LOG_ERR("line %d: %s does not hold", __LINE__, #cond);                 \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What the callbacks share. */
struct state {
	/* Comch */
	struct doca_comch_connection *connection;
	enum doca_ctx_states comch_state;
	int sends_done;
	int disconnected;
	uint8_t blobs[2][MAX_BLOB];
	uint32_t blob_len[2];
	int blobs_received;
	/* The task in flight on the event's context */
	int task_done;
	doca_error_t task_status;
	uint64_t fetched;
};

/* ---- Sync event tasks ---- */

static void add_done(struct doca_sync_event_task_notify_add *task, union doca_data task_user_data,
		     union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;
	struct doca_task *t = doca_sync_event_task_notify_add_as_doca_task(task);

	(void)task_user_data;
	s->task_status = doca_task_get_status(t);
	s->task_done = 1;
	doca_task_free(t);
}

static void wait_done(struct doca_sync_event_task_wait_eq *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;
	struct doca_task *t = doca_sync_event_task_wait_eq_as_doca_task(task);

	(void)task_user_data;
	s->task_status = doca_task_get_status(t);
	s->task_done = 1;
	doca_task_free(t);
}

/* Submits a task and progresses until its callback ran; its status. */
static doca_error_t run_task(struct doca_pe *pe, struct doca_task *task, struct state *s)
{
	double deadline = now_sec() + TIMEOUT_SEC;
	doca_error_t result;

	s->task_done = 0;
	result = doca_task_submit(task);
	if (result != DOCA_SUCCESS) {
		doca_task_free(task);
		return result;
	}
	while (!s->task_done) {
		if (!doca_pe_progress(pe) && now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
	}
	return s->task_status;
}

/* Adds 1 to the event through a notify_add task; checks the value before was `before`. */
static doca_error_t task_add(struct doca_pe *pe, struct doca_sync_event *event, struct state *s,
			     uint64_t before)
{
	struct doca_sync_event_task_notify_add *task;
	doca_error_t result;

	result = doca_sync_event_task_notify_add_alloc_init(event, 1, &s->fetched, (union doca_data){0}, &task);
	if (result != DOCA_SUCCESS)
		return result;
	result = run_task(pe, doca_sync_event_task_notify_add_as_doca_task(task), s);
	if (result == DOCA_SUCCESS && s->fetched != before) {
		DOCA_LOG_ERR("the value before the addition was %lu, not %lu", (unsigned long)s->fetched,
			     (unsigned long)before);
		failures++;
	}
	return result;
}

/* Waits, through a wait_eq task, for the event to hold `value`. */
static doca_error_t task_wait(struct doca_pe *pe, struct doca_sync_event *event, struct state *s, uint64_t value)
{
	struct doca_sync_event_task_wait_eq *task;
	doca_error_t result;

	result = doca_sync_event_task_wait_eq_alloc_init(event, value, UINT64_MAX, (union doca_data){0}, &task);
	if (result != DOCA_SUCCESS)
		return result;
	return run_task(pe, doca_sync_event_task_wait_eq_as_doca_task(task), s);
}

/* The event as a context on pe with notify_add and wait_eq tasks, started. */
static doca_error_t start_event_ctx(struct doca_sync_event *event, struct doca_pe *pe, struct state *s)
{
	struct doca_ctx *ctx = doca_sync_event_as_ctx(event);
	doca_error_t result;

	if (ctx == NULL)
		return DOCA_ERROR_UNEXPECTED;
	result = doca_sync_event_task_notify_add_set_conf(event, add_done, add_done, NUM_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_task_wait_eq_set_conf(event, wait_done, wait_done, NUM_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, (union doca_data){.ptr = s});
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, ctx);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot start the event as a context: %s", doca_error_get_descr(result));
	return result;
}

/* Stops a context and progresses until it is IDLE. */
static doca_error_t stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states st = DOCA_CTX_STATE_RUNNING;
	double deadline = now_sec() + TIMEOUT_SEC;
	doca_error_t result = doca_ctx_stop(ctx);

	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS)
		return result;
	while (doca_ctx_get_state(ctx, &st) == DOCA_SUCCESS && st != DOCA_CTX_STATE_IDLE) {
		if (now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
		doca_pe_progress(pe);
	}
	return DOCA_SUCCESS;
}

/*
 * The rounds: in round r this side (`first` moves first) adds 1 to both events and waits for
 * the other side's addition; the host's additions give odd values, the DPU's even ones.
 */
static void rounds(struct doca_pe *pe, struct doca_sync_event *sync_ev, struct doca_sync_event *task_ev,
		   struct state *s, uint64_t count, bool first)
{
	uint64_t fetched = 0, value = 0;

	for (uint64_t r = 1; r <= count && failures == 0; r++) {
		uint64_t mine = first ? 2 * r - 1 : 2 * r, theirs = first ? 2 * r : 2 * r - 1;

		if (!first) {
			CHECK(doca_sync_event_wait_eq_yield(sync_ev, theirs, UINT64_MAX), DOCA_SUCCESS);
			CHECK(task_wait(pe, task_ev, s, theirs), DOCA_SUCCESS);
		}
		CHECK(doca_sync_event_update_add(sync_ev, 1, &fetched), DOCA_SUCCESS);
		EXPECT(fetched == mine - 1);
		CHECK(task_add(pe, task_ev, s, mine - 1), DOCA_SUCCESS);
		if (first) {
			CHECK(doca_sync_event_wait_eq_yield(sync_ev, theirs, UINT64_MAX), DOCA_SUCCESS);
			CHECK(task_wait(pe, task_ev, s, theirs), DOCA_SUCCESS);
		}
	}
	CHECK(doca_sync_event_get(sync_ev, &value), DOCA_SUCCESS);
	EXPECT(value == 2 * count);
	DOCA_LOG_INFO("%lu rounds on each event, both at %lu", (unsigned long)count, (unsigned long)value);
}

/* ---- Comch ---- */

static void send_done(struct doca_comch_task_send *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;

	(void)task_user_data;
	if (doca_task_get_status(doca_comch_task_send_as_task(task)) != DOCA_SUCCESS)
		failures++;
	s->sends_done++;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static doca_error_t open_device(const char *pci_addr, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n;
	doca_error_t result = doca_devinfo_create_list(&list, &n);

	if (result != DOCA_SUCCESS)
		return result;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		/* Both sides need the capabilities of the sample. */
		result = doca_sync_event_cap_is_export_to_remote_pci_supported(list[i]);
		if (result == DOCA_SUCCESS)
			result = doca_sync_event_cap_is_create_from_export_supported(list[i]);
		if (result == DOCA_SUCCESS)
			result = doca_sync_event_cap_task_wait_eq_is_supported(list[i]);
		if (result == DOCA_SUCCESS)
			result = doca_sync_event_cap_task_notify_add_is_supported(list[i]);
		if (result == DOCA_SUCCESS)
			result = doca_dev_open(list[i], dev);
		break;
	}
	doca_devinfo_destroy_list(list);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot open device %s: %s", pci_addr, doca_error_get_descr(result));
	return result;
}

/* Progresses until *flag reaches `want`; false after TIMEOUT_SEC. */
static bool progress_until(struct doca_pe *pe, const int *flag, int want)
{
	double deadline = now_sec() + TIMEOUT_SEC;

	while (*flag < want) {
		if (!doca_pe_progress(pe) && now_sec() > deadline)
			return false;
	}
	return true;
}

#ifdef DOCA_ARCH_DPU

/* ---- The DPU: the Comch server, importer of both events ---- */

static struct state *state_of_ctx(struct doca_ctx *ctx)
{
	union doca_data user_data = {0};

	doca_ctx_get_user_data(ctx, &user_data);
	return user_data.ptr;
}

static void blob_received(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			  struct doca_comch_connection *connection)
{
	struct doca_comch_server *server = doca_comch_server_get_server_ctx(connection);
	struct state *s = state_of_ctx(doca_comch_server_as_ctx(server));

	(void)event;
	if (s->blobs_received >= 2 || msg_len > MAX_BLOB) {
		failures++;
		return;
	}
	memcpy(s->blobs[s->blobs_received], recv_buffer, msg_len);
	s->blob_len[s->blobs_received++] = msg_len;
}

static void connected(struct doca_comch_event_connection_status_changed *event, struct doca_comch_connection *connection,
		      uint8_t change_successful)
{
	(void)event;
	(void)connection;
	(void)change_successful;
}

static void disconnected(struct doca_comch_event_connection_status_changed *event,
			 struct doca_comch_connection *connection, uint8_t change_successful)
{
	struct doca_comch_server *server = doca_comch_server_get_server_ctx(connection);

	(void)event;
	(void)change_successful;
	state_of_ctx(doca_comch_server_as_ctx(server))->disconnected = 1;
}

static doca_error_t side(struct doca_pe *pe, struct state *s, uint64_t count)
{
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_devinfo_rep **reps;
	struct doca_comch_server *server = NULL;
	struct doca_sync_event *sync_ev = NULL, *task_ev = NULL;
	uint32_t n = 0;
	uint64_t value = 1;
	doca_error_t result;

	result = open_device(DPU_PCI, &dev);
	if (result != DOCA_SUCCESS)
		return result;
	if (doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &reps, &n) == DOCA_SUCCESS) {
		for (uint32_t i = 0; i < n && rep == NULL; i++) {
			uint8_t equal = 0;

			if (doca_devinfo_rep_is_equal_pci_addr(reps[i], HOST_PCI, &equal) == DOCA_SUCCESS && equal &&
			    doca_dev_rep_open(reps[i], &rep) != DOCA_SUCCESS)
				rep = NULL;
		}
		doca_devinfo_rep_destroy_list(reps);
	}
	if (rep == NULL) {
		DOCA_LOG_ERR("no representor of %s", HOST_PCI);
		doca_dev_close(dev);
		return DOCA_ERROR_NOT_FOUND;
	}
	result = doca_comch_server_create(dev, rep, SERVER_NAME, &server);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_task_send_set_conf(server, send_done, send_done, NUM_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_msg_recv_register(server, blob_received);
	if (result == DOCA_SUCCESS)
		result = doca_comch_server_event_connection_status_changed_register(server, connected, disconnected);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(doca_comch_server_as_ctx(server), (union doca_data){.ptr = s});
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, doca_comch_server_as_ctx(server));
	if (result == DOCA_SUCCESS)
		result = doca_ctx_start(doca_comch_server_as_ctx(server));
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot start the Comch server: %s", doca_error_get_descr(result));
		goto out;
	}
	if (!progress_until(pe, &s->blobs_received, 2)) {
		DOCA_LOG_ERR("no blobs from the host within %d s", TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
		goto stop;
	}
	/* Misuse first: a damaged blob, and a size that is not the blob's. */
	s->blobs[0][0] ^= 0xff;
	CHECK(doca_sync_event_create_from_export(dev, s->blobs[0], s->blob_len[0], &sync_ev),
	      DOCA_ERROR_INVALID_VALUE);
	s->blobs[0][0] ^= 0xff;
	CHECK(doca_sync_event_create_from_export(dev, s->blobs[0], s->blob_len[0] - 1, &sync_ev),
	      DOCA_ERROR_INVALID_VALUE);
	result = doca_sync_event_create_from_export(dev, s->blobs[0], s->blob_len[0], &sync_ev);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_create_from_export(dev, s->blobs[1], s->blob_len[1], &task_ev);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot import the host's events: %s", doca_error_get_descr(result));
		goto destroy;
	}
	/* An imported event cannot be configured; it is usable at once, and may be started. */
	CHECK(doca_sync_event_add_publisher_location_cpu(sync_ev, dev), DOCA_ERROR_NOT_PERMITTED);
	CHECK(doca_sync_event_get(sync_ev, &value), DOCA_SUCCESS);
	EXPECT(value <= 1); /* the host may have made its first addition already */
	CHECK(doca_sync_event_start(sync_ev), DOCA_SUCCESS);
	result = start_event_ctx(task_ev, pe, s);
	if (result == DOCA_SUCCESS) {
		rounds(pe, sync_ev, task_ev, s, count, false);
		CHECK(stop_ctx(pe, doca_sync_event_as_ctx(task_ev)), DOCA_SUCCESS);
	}
	CHECK(doca_sync_event_stop(sync_ev), DOCA_SUCCESS);
destroy:
	if (task_ev != NULL)
		CHECK(doca_sync_event_destroy(task_ev), DOCA_SUCCESS);
	if (sync_ev != NULL)
		CHECK(doca_sync_event_destroy(sync_ev), DOCA_SUCCESS);
	/* The host disconnects once it is done. */
	if (!progress_until(pe, &s->disconnected, 1))
		DOCA_LOG_ERR("the host did not disconnect within %d s", TIMEOUT_SEC);
stop:
	CHECK(stop_ctx(pe, doca_comch_server_as_ctx(server)), DOCA_SUCCESS);
out:
	if (server != NULL)
		CHECK(doca_comch_server_destroy(server), DOCA_SUCCESS);
	CHECK(doca_dev_rep_close(rep), DOCA_SUCCESS);
	CHECK(doca_dev_close(dev), DOCA_SUCCESS);
	return result;
}

#else /* the host */

/* ---- The host: the Comch client, exporter of both events ---- */

static void comch_state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
				enum doca_ctx_states next)
{
	struct state *s = user_data.ptr;

	(void)ctx;
	(void)prev;
	s->comch_state = next;
}

static void host_msg(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
		     struct doca_comch_connection *connection)
{
	(void)event;
	(void)recv_buffer;
	(void)msg_len;
	(void)connection;
	failures++; /* the DPU sends nothing */
}

/* An event published by the remote PCI side and subscribed by this CPU. */
static doca_error_t create_event(struct doca_dev *dev, struct doca_sync_event **event)
{
	doca_error_t result = doca_sync_event_create(event);

	if (result != DOCA_SUCCESS)
		return result;
	result = doca_sync_event_add_publisher_location_remote_pci(*event);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_add_subscriber_location_cpu(*event, dev);
	if (result != DOCA_SUCCESS) {
		doca_sync_event_destroy(*event);
		*event = NULL;
	}
	return result;
}

/* Sends `len` bytes at `msg` on the connection. */
static doca_error_t send_blob(struct doca_comch_client *client, struct state *s, const uint8_t *msg, size_t len)
{
	struct doca_comch_task_send *task;
	doca_error_t result;

	result = doca_comch_client_task_send_alloc_init(client, s->connection, msg, (uint32_t)len, &task);
	if (result != DOCA_SUCCESS)
		return result;
	result = doca_task_submit(doca_comch_task_send_as_task(task));
	if (result != DOCA_SUCCESS)
		doca_task_free(doca_comch_task_send_as_task(task));
	return result;
}

static doca_error_t side(struct doca_pe *pe, struct state *s, uint64_t count)
{
	struct doca_dev *dev = NULL;
	struct doca_comch_client *client = NULL;
	struct doca_sync_event *sync_ev = NULL, *task_ev = NULL, *local = NULL;
	const uint8_t *blobs[2] = {NULL, NULL}, *again = NULL;
	size_t sizes[2] = {0, 0}, again_size = 0;
	double deadline = now_sec() + TIMEOUT_SEC;
	doca_error_t result;

	result = open_device(HOST_PCI, &dev);
	if (result != DOCA_SUCCESS)
		return result;
	/* The first event, started stand-alone and exported after start, as the sample does. */
	result = create_event(dev, &sync_ev);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_start(sync_ev);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_export_to_remote_pci(sync_ev, dev, &blobs[0], &sizes[0]);
	/* The second, as a context with tasks, exported once running. */
	if (result == DOCA_SUCCESS)
		result = create_event(dev, &task_ev);
	if (result == DOCA_SUCCESS)
		result = start_event_ctx(task_ev, pe, s);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_export_to_remote_pci(task_ev, dev, &blobs[1], &sizes[1]);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create and export the events: %s", doca_error_get_descr(result));
		goto destroy;
	}
	/* The blob is the event's: the same bytes when asked again. */
	CHECK(doca_sync_event_export_to_remote_pci(sync_ev, dev, &again, &again_size), DOCA_SUCCESS);
	EXPECT(again == blobs[0] && again_size == sizes[0]);
	/* An event with its counter in its own memory cannot be exported once started. */
	CHECK(doca_sync_event_create(&local), DOCA_SUCCESS);
	CHECK(doca_sync_event_add_publisher_location_cpu(local, dev), DOCA_SUCCESS);
	CHECK(doca_sync_event_add_subscriber_location_cpu(local, dev), DOCA_SUCCESS);
	CHECK(doca_sync_event_start(local), DOCA_SUCCESS);
	CHECK(doca_sync_event_export_to_remote_pci(local, dev, &again, &again_size), DOCA_ERROR_NOT_SUPPORTED);
	/* Stand-alone, it cannot become a context. */
	EXPECT(doca_sync_event_as_ctx(local) == NULL);
	CHECK(doca_sync_event_destroy(local), DOCA_SUCCESS);

	result = doca_comch_client_create(dev, SERVER_NAME, &client);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_task_send_set_conf(client, send_done, send_done, NUM_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_comch_client_event_msg_recv_register(client, host_msg);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(doca_comch_client_as_ctx(client), (union doca_data){.ptr = s});
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(doca_comch_client_as_ctx(client), comch_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(pe, doca_comch_client_as_ctx(client));
	if (result == DOCA_SUCCESS) {
		result = doca_ctx_start(doca_comch_client_as_ctx(client));
		if (result == DOCA_ERROR_IN_PROGRESS)
			result = DOCA_SUCCESS;
	}
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot start the Comch client: %s", doca_error_get_descr(result));
		goto destroy;
	}
	while (s->comch_state != DOCA_CTX_STATE_RUNNING && now_sec() < deadline)
		doca_pe_progress(pe);
	if (s->comch_state != DOCA_CTX_STATE_RUNNING ||
	    doca_comch_client_get_connection(client, &s->connection) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("no Comch server `%s` within %d s: start the DPU side first", SERVER_NAME,
			     TIMEOUT_SEC);
		result = DOCA_ERROR_TIME_OUT;
		goto stop;
	}
	result = send_blob(client, s, blobs[0], sizes[0]);
	if (result == DOCA_SUCCESS)
		result = send_blob(client, s, blobs[1], sizes[1]);
	if (result != DOCA_SUCCESS || !progress_until(pe, &s->sends_done, 2)) {
		DOCA_LOG_ERR("cannot send the blobs: %s", doca_error_get_descr(result));
		if (result == DOCA_SUCCESS)
			result = DOCA_ERROR_TIME_OUT;
		goto stop;
	}
	rounds(pe, sync_ev, task_ev, s, count, true);
stop:
	CHECK(stop_ctx(pe, doca_comch_client_as_ctx(client)), DOCA_SUCCESS);
destroy:
	if (client != NULL)
		CHECK(doca_comch_client_destroy(client), DOCA_SUCCESS);
	if (task_ev != NULL) {
		enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;

		if (doca_ctx_get_state(doca_sync_event_as_ctx(task_ev), &st) == DOCA_SUCCESS &&
		    st != DOCA_CTX_STATE_IDLE)
			CHECK(stop_ctx(pe, doca_sync_event_as_ctx(task_ev)), DOCA_SUCCESS);
		CHECK(doca_sync_event_destroy(task_ev), DOCA_SUCCESS);
	}
	if (sync_ev != NULL)
		CHECK(doca_sync_event_destroy(sync_ev), DOCA_SUCCESS);
	CHECK(doca_dev_close(dev), DOCA_SUCCESS);
	return result;
}

#endif

int main(int argc, char **argv)
{
	struct state s = {.comch_state = DOCA_CTX_STATE_IDLE};
	struct doca_pe *pe = NULL;
	uint64_t count = 100;
	doca_error_t result;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-c") == 0)
			count = strtoull(argv[i + 1], NULL, 10);
	}
	if (count == 0) {
		DOCA_LOG_ERR("-c takes a count of rounds of at least 1");
		return EXIT_FAILURE;
	}
	/* A sync event wait has no timeout (DOCA's): if the other side fails, this one ends here. */
	alarm(HANG_LIMIT_SEC);
	result = doca_pe_create(&pe);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create a progress engine: %s", doca_error_get_descr(result));
		return EXIT_FAILURE;
	}
	result = side(pe, &s, count);
	CHECK(doca_pe_destroy(pe), DOCA_SUCCESS);
	if (result != DOCA_SUCCESS || failures != 0) {
		DOCA_LOG_ERR("%s side failed: %s, %d check(s) failed",
#ifdef DOCA_ARCH_DPU
			     "DPU",
#else
			     "host",
#endif
			     doca_error_get_descr(result), failures);
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("passed");
	return EXIT_SUCCESS;
}
