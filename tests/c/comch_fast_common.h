/*
 * The shared half of the Comch fast-path test pair (comch_fast_server.c, comch_fast_client.c).
 *
 * Each side puts a producer and a consumer on its connection and streams COUNT messages of SIZE
 * bytes to the other side's consumer while checking the COUNT messages that arrive on its own.
 * The programs are written the way DOCA's fast-path samples are, so that they prove a program
 * written like those samples runs unchanged on the soft device:
 *
 *  - flags through doca_argp, logging through doca_log, the version from doca_version.h;
 *  - a consumer's doca_ctx_start must answer DOCA_ERROR_IN_PROGRESS (anything else fails), a
 *    producer's DOCA_SUCCESS;
 *  - receives are posted from the consumer's state callback once it is RUNNING;
 *  - the receive callback checks the message and posts the same task again inside the callback;
 *  - the send callback sends the next message from inside the callback with the same task;
 *  - the producer asks for a pool of 10,240 send tasks;
 *  - strlen, strcpy, memcpy and memset are used without <string.h>: DOCA programs rely on DOCA's
 *    headers to have declared them.
 *
 * A message is its number (8 bytes, little-endian) followed by bytes derived from the number and
 * the direction; the immediate data names the direction. A side passes only if it received
 * messages 0 .. COUNT-1 once each, in order, intact, and COUNT of its sends completed.
 *
 * Every program includes this header once, after DOCA_LOG_REGISTER.
 */
#ifndef DPAKIT_TESTS_COMCH_FAST_COMMON_H
#define DPAKIT_TESTS_COMCH_FAST_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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
#include <doca_version.h>

/* The server/connection status callbacks under their DOCA 2.8 names. */
_Static_assert(DOCA_VERSION_LTE_CURRENT(2, 8, 0), "the Comch API of DOCA 2.8 or later is needed");

#define FAST_SEND_TASKS 10240	   /* the producer's send-task pool */
#define FAST_SENDS_IN_FLIGHT 8	   /* send tasks allocated, each reused for message after message */
#define FAST_RECV_TASKS 32	   /* receives the consumer keeps posted */
#define FAST_CTRL_TASKS 8	   /* the control path carries nothing, but its tasks are configured */
#define FAST_IMM_LEN 4		   /* the direction's tag */
#define FAST_HEADER_LEN 8	   /* the message number */
#define FAST_MEM_ALIGN 4096	   /* consumer memory on pages of its own */
#define FAST_NAME_LEN 128	   /* room for a service name; the device's limit is checked */
#define FAST_SLEEP_NSEC 10000	   /* nap when a progress found nothing to do */
#define FAST_STEP_TIMEOUT_SEC 30.0 /* connecting, the peer's consumer, stopping */
#define FAST_EXCHANGE_TIMEOUT_SEC 120.0
#define FAST_PEER_GONE_GRACE_SEC 1.0 /* completions still due after the peer left */

/* The immediate data of each direction. */
static const uint8_t fast_tag_to_server[FAST_IMM_LEN] = {'C', '2', 'S', 0};
static const uint8_t fast_tag_to_client[FAST_IMM_LEN] = {'S', '2', 'C', 0};

/* ---- Flags ---- */

struct fast_config {
	char pci_addr[DOCA_DEVINFO_PCI_ADDR_SIZE];
	char rep_pci_addr[DOCA_DEVINFO_REP_PCI_ADDR_SIZE];
	char service_name[FAST_NAME_LEN];
	uint32_t count; /* messages each way */
	uint32_t size;	/* bytes per message */
};

static inline doca_error_t fast_copy_string(char *dst, size_t room, const char *value, const char *what)
{
	if (strlen(value) >= room) {
		DOCA_LOG_ERR("%s takes at most %zu characters", what, room - 1);
		return DOCA_ERROR_INVALID_VALUE;
	}
	strcpy(dst, value);
	return DOCA_SUCCESS;
}

static inline doca_error_t fast_pci_addr_callback(void *param, void *config)
{
	struct fast_config *cfg = config;

	return fast_copy_string(cfg->pci_addr, sizeof(cfg->pci_addr), param, "--pci-addr");
}

static inline doca_error_t fast_rep_pci_callback(void *param, void *config)
{
	struct fast_config *cfg = config;

	return fast_copy_string(cfg->rep_pci_addr, sizeof(cfg->rep_pci_addr), param, "--rep-pci");
}

static inline doca_error_t fast_service_name_callback(void *param, void *config)
{
	struct fast_config *cfg = config;

	return fast_copy_string(cfg->service_name, sizeof(cfg->service_name), param, "--service-name");
}

static inline doca_error_t fast_count_callback(void *param, void *config)
{
	struct fast_config *cfg = config;
	int count = *(int *)param;

	if (count < 1) {
		DOCA_LOG_ERR("--count takes a positive number of messages, not %d", count);
		return DOCA_ERROR_INVALID_VALUE;
	}
	cfg->count = (uint32_t)count;
	return DOCA_SUCCESS;
}

static inline doca_error_t fast_size_callback(void *param, void *config)
{
	struct fast_config *cfg = config;
	int size = *(int *)param;

	/* The upper bound is the device's, checked once it is open. */
	if (size < FAST_HEADER_LEN) {
		DOCA_LOG_ERR("--buf-size takes at least %d bytes (the message number), not %d", FAST_HEADER_LEN,
			     size);
		return DOCA_ERROR_INVALID_VALUE;
	}
	cfg->size = (uint32_t)size;
	return DOCA_SUCCESS;
}

static inline doca_error_t fast_register_param(const char *short_name, const char *long_name, const char *arguments,
					       const char *description, enum doca_argp_type type,
					       doca_argp_param_cb_t callback)
{
	struct doca_argp_param *param;
	doca_error_t result = doca_argp_param_create(&param);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create ARGP param: %s", doca_error_get_descr(result));
		return result;
	}
	doca_argp_param_set_short_name(param, short_name);
	doca_argp_param_set_long_name(param, long_name);
	doca_argp_param_set_arguments(param, arguments);
	doca_argp_param_set_description(param, description);
	doca_argp_param_set_callback(param, callback);
	doca_argp_param_set_type(param, type);
	result = doca_argp_register_param(param);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to register program param: %s", doca_error_get_descr(result));
		doca_argp_param_destroy(param);
	}
	return result;
}

/* The flags both sides take; the server adds --rep-pci. */
static inline doca_error_t fast_register_params(bool server)
{
	doca_error_t result;

	result = fast_register_param("p", "pci-addr", "<PCI-ADDRESS>",
				     server ? "Arm-side device to listen on" : "host device to connect through",
				     DOCA_ARGP_TYPE_STRING, fast_pci_addr_callback);
	if (result == DOCA_SUCCESS && server)
		result = fast_register_param("r", "rep-pci", "<PCI-ADDRESS>", "representor of the client's function",
					     DOCA_ARGP_TYPE_STRING, fast_rep_pci_callback);
	if (result == DOCA_SUCCESS)
		result = fast_register_param("s", "service-name", "<NAME>", "Comch service name",
					     DOCA_ARGP_TYPE_STRING, fast_service_name_callback);
	if (result == DOCA_SUCCESS)
		result = fast_register_param("c", "count", "<NUM>", "messages sent each way", DOCA_ARGP_TYPE_INT,
					     fast_count_callback);
	if (result == DOCA_SUCCESS)
		result = fast_register_param("b", "buf-size", "<BYTES>", "bytes per message", DOCA_ARGP_TYPE_INT,
					     fast_size_callback);
	return result;
}

/* ---- Devices ---- */

/* Whether the device hosts the Comch role asked for and the fast path at the configured sizes. */
static inline doca_error_t fast_check_caps(const struct doca_devinfo *devinfo, const struct fast_config *cfg,
					   bool server)
{
	uint32_t producer_buf = 0, consumer_buf = 0, producer_tasks = 0, consumer_tasks = 0, name_len = 0;
	doca_error_t result;

	result = server ? doca_comch_cap_server_is_supported(devinfo) : doca_comch_cap_client_is_supported(devinfo);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_cap_is_supported(devinfo);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_cap_is_supported(devinfo);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("the device cannot host a Comch %s with producers and consumers: %s",
			     server ? "server" : "client", doca_error_get_descr(result));
		return result;
	}
	result = doca_comch_cap_get_max_name_len(devinfo, &name_len);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_cap_get_max_buf_size(devinfo, &producer_buf);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_cap_get_max_buf_size(devinfo, &consumer_buf);
	if (result == DOCA_SUCCESS)
		result = doca_comch_producer_cap_get_max_num_tasks(devinfo, &producer_tasks);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_cap_get_max_num_tasks(devinfo, &consumer_tasks);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to query the device's capabilities: %s", doca_error_get_descr(result));
		return result;
	}
	if (strlen(cfg->service_name) >= name_len) {
		DOCA_LOG_ERR("service name `%s` is longer than the device's %u characters", cfg->service_name,
			     name_len - 1);
		return DOCA_ERROR_INVALID_VALUE;
	}
	if (cfg->size > producer_buf || cfg->size > consumer_buf) {
		DOCA_LOG_ERR("%u-byte messages exceed the device's buffers (producer %u, consumer %u bytes)",
			     cfg->size, producer_buf, consumer_buf);
		return DOCA_ERROR_INVALID_VALUE;
	}
	if (producer_tasks < FAST_SEND_TASKS || consumer_tasks < FAST_RECV_TASKS) {
		DOCA_LOG_ERR("the device takes %u send and %u receive tasks; %u and %u are needed", producer_tasks,
			     consumer_tasks, FAST_SEND_TASKS, FAST_RECV_TASKS);
		return DOCA_ERROR_NOT_SUPPORTED;
	}
	return DOCA_SUCCESS;
}

/* Opens the device at cfg->pci_addr if it passes fast_check_caps. */
static inline doca_error_t fast_open_device(const struct fast_config *cfg, bool server, struct doca_dev **dev)
{
	struct doca_devinfo **dev_list;
	uint32_t nb_devs = 0;
	doca_error_t result = doca_devinfo_create_list(&dev_list, &nb_devs);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to load the device list: %s", doca_error_get_descr(result));
		return result;
	}
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < nb_devs; i++) {
		uint8_t is_equal = 0;

		if (doca_devinfo_is_equal_pci_addr(dev_list[i], cfg->pci_addr, &is_equal) != DOCA_SUCCESS ||
		    !is_equal)
			continue;
		result = fast_check_caps(dev_list[i], cfg, server);
		if (result == DOCA_SUCCESS)
			result = doca_dev_open(dev_list[i], dev);
		if (result != DOCA_SUCCESS)
			DOCA_LOG_ERR("Failed to open device %s: %s", cfg->pci_addr, doca_error_get_descr(result));
		break;
	}
	if (result == DOCA_ERROR_NOT_FOUND)
		DOCA_LOG_ERR("no device at PCI address %s", cfg->pci_addr);
	doca_devinfo_destroy_list(dev_list);
	return result;
}

/* ---- Progress ---- */

static inline double fast_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Progresses the PE until done(arg) holds (true) or timeout_sec passes (false). */
static inline bool fast_progress_until(struct doca_pe *pe, bool (*done)(const void *arg), const void *arg,
				       double timeout_sec)
{
	struct timespec nap = {.tv_sec = 0, .tv_nsec = FAST_SLEEP_NSEC};
	double deadline = fast_now() + timeout_sec;

	while (!done(arg)) {
		if (doca_pe_progress(pe) != 0)
			continue;
		if (fast_now() > deadline)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

static inline bool fast_ctx_is_idle(const void *arg)
{
	enum doca_ctx_states state = DOCA_CTX_STATE_IDLE;

	return doca_ctx_get_state(arg, &state) != DOCA_SUCCESS || state == DOCA_CTX_STATE_IDLE;
}

/* Stops a context (unless it is IDLE: never started, or refused) and progresses until it is IDLE. */
static inline doca_error_t fast_stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx, const char *what)
{
	doca_error_t result;

	if (fast_ctx_is_idle(ctx))
		return DOCA_SUCCESS;
	result = doca_ctx_stop(ctx);
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("Failed to stop the %s: %s", what, doca_error_get_descr(result));
		return result;
	}
	if (!fast_progress_until(pe, fast_ctx_is_idle, ctx, FAST_STEP_TIMEOUT_SEC)) {
		DOCA_LOG_ERR("the %s did not reach IDLE within %.0f s", what, FAST_STEP_TIMEOUT_SEC);
		return DOCA_ERROR_TIME_OUT;
	}
	return DOCA_SUCCESS;
}

/* ---- Messages ---- */

static inline uint8_t fast_pattern(uint64_t seq, size_t i, uint8_t tag)
{
	return (uint8_t)(seq * 131u + i * 7u + (i >> 8) * 29u + tag);
}

/* Writes message `seq` of the direction `tag` names into `size` bytes at dst. */
static inline void fast_fill(uint8_t *dst, size_t size, uint64_t seq, const uint8_t tag[FAST_IMM_LEN])
{
	uint8_t header[FAST_HEADER_LEN];

	for (int i = 0; i < FAST_HEADER_LEN; i++)
		header[i] = (uint8_t)(seq >> (8 * i));
	memcpy(dst, header, sizeof(header));
	for (size_t i = FAST_HEADER_LEN; i < size; i++)
		dst[i] = fast_pattern(seq, i, tag[0]);
}

/* The number a message carries. */
static inline uint64_t fast_seq_of(const uint8_t *msg)
{
	uint8_t header[FAST_HEADER_LEN];
	uint64_t seq = 0;

	memcpy(header, msg, sizeof(header));
	for (int i = 0; i < FAST_HEADER_LEN; i++)
		seq |= (uint64_t)header[i] << (8 * i);
	return seq;
}

/* ---- One side of the fast path ---- */

struct fast_side {
	const char *role; /* "server" or "client", for the log */
	const uint8_t *out_tag, *in_tag;
	uint64_t count;
	size_t size;
	struct doca_pe *pe;
	struct doca_dev *dev;

	/* Send memory: one buffer per send task. Receive memory: one buffer per receive task. */
	uint8_t *send_mem, *recv_mem;
	struct doca_mmap *send_mmap, *recv_mmap;
	struct doca_buf_inventory *send_inv, *recv_inv;
	struct doca_buf *send_bufs[FAST_SENDS_IN_FLIGHT];
	struct doca_buf *recv_bufs[FAST_RECV_TASKS];

	struct doca_comch_producer *producer;
	struct doca_comch_consumer *consumer;
	struct doca_comch_producer_task_send *send_tasks[FAST_SENDS_IN_FLIGHT];
	struct doca_comch_consumer_task_post_recv *recv_tasks[FAST_RECV_TASKS];
	bool recv_posted[FAST_RECV_TASKS];
	enum doca_ctx_states consumer_state;
	bool consumer_fell_back; /* back to IDLE from STARTING or RUNNING (refused or stopped) */

	bool remote_known;   /* the peer's consumer was announced (new-consumer event) */
	bool remote_expired; /* ... and expired since */
	uint32_t remote_consumer_id;

	bool stopping;	     /* tear-down: flushed tasks are expected */
	bool recvs_freed;    /* the posted receives were freed before the consumer stopped */
	uint64_t next_seq;   /* the next message to send */
	uint64_t sends_done; /* sends completed successfully */
	uint64_t received;   /* messages received intact and in order */
	uint64_t bad;	     /* messages received out of order, corrupt, or beyond count */
	uint64_t errors;     /* failed tasks and calls */
	uint64_t freed_callbacks; /* callbacks for tasks the program had freed: must stay 0 */
	uint64_t flushed_recvs;	  /* receives a stop returned through the error callback */
};

static inline void fast_side_init(struct fast_side *side, const char *role, bool server,
				  const struct fast_config *cfg, struct doca_dev *dev, struct doca_pe *pe)
{
	memset(side, 0, sizeof(*side));
	side->role = role;
	side->out_tag = server ? fast_tag_to_client : fast_tag_to_server;
	side->in_tag = server ? fast_tag_to_server : fast_tag_to_client;
	side->count = cfg->count;
	side->size = cfg->size;
	side->dev = dev;
	side->pe = pe;
	side->consumer_state = DOCA_CTX_STATE_IDLE;
}

/* The peer announced a consumer on the connection: the one our sends go to. */
static inline void fast_side_new_consumer(struct fast_side *side, uint32_t id)
{
	if (side->remote_known) {
		DOCA_LOG_ERR("%s: a second remote consumer (%u after %u)", side->role, id, side->remote_consumer_id);
		side->errors++;
		return;
	}
	side->remote_consumer_id = id;
	side->remote_known = true;
	DOCA_LOG_INFO("%s: remote consumer %u announced", side->role, id);
}

static inline void fast_side_expired_consumer(struct fast_side *side, uint32_t id)
{
	if (side->remote_known && id == side->remote_consumer_id)
		side->remote_expired = true;
}

/* Writes the next message into send task k's buffer and submits the task. */
static inline doca_error_t fast_send_next(struct fast_side *side, uint32_t k)
{
	struct doca_task *task = doca_comch_producer_task_send_as_task(side->send_tasks[k]);
	uint64_t seq = side->next_seq;
	doca_error_t result;

	fast_fill(side->send_mem + k * side->size, side->size, seq, side->out_tag);
	doca_task_set_user_data(task, (union doca_data){.u64 = k});
	result = doca_task_submit(task);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to submit message %lu: %s", side->role, (unsigned long)seq,
			     doca_error_get_descr(result));
		return result;
	}
	side->next_seq++;
	return DOCA_SUCCESS;
}

/* A send completed: the same task carries the next message, submitted from here. */
static inline void fast_send_completed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
				       union doca_data ctx_user_data)
{
	struct fast_side *side = ctx_user_data.ptr;
	uint32_t k = (uint32_t)task_user_data.u64;

	side->sends_done++;
	if (side->next_seq < side->count && !side->stopping && fast_send_next(side, k) == DOCA_SUCCESS)
		return;
	if (side->next_seq < side->count && !side->stopping)
		side->errors++;
	/* Nothing left to send on this task (or it could not be sent): it goes back to the pool. */
	doca_task_free(doca_comch_producer_task_send_as_task(task));
	side->send_tasks[k] = NULL;
}

static inline void fast_send_failed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
				    union doca_data ctx_user_data)
{
	struct fast_side *side = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_producer_task_send_as_task(task);
	uint32_t k = (uint32_t)task_user_data.u64;

	side->errors++;
	DOCA_LOG_ERR("%s: a send failed: %s", side->role, doca_error_get_descr(doca_task_get_status(t)));
	doca_task_free(t);
	side->send_tasks[k] = NULL;
}

/* Whether the buffer holds message side->received of our direction, whole. */
static inline bool fast_message_ok(struct fast_side *side, struct doca_comch_consumer_task_post_recv *task)
{
	struct doca_buf *buf = doca_comch_consumer_task_post_recv_get_buf(task);
	const uint8_t *imm = doca_comch_consumer_task_post_recv_get_imm_data(task);
	uint8_t tag[FAST_IMM_LEN];
	void *data = NULL;
	size_t len = 0;
	uint64_t seq;
	const uint8_t *msg;

	if (doca_buf_get_data(buf, &data) != DOCA_SUCCESS || doca_buf_get_data_len(buf, &len) != DOCA_SUCCESS)
		return false;
	if (len != side->size) {
		DOCA_LOG_ERR("%s: message %lu has %zu bytes, not %zu", side->role, (unsigned long)side->received, len,
			     side->size);
		return false;
	}
	if (doca_comch_consumer_task_post_recv_get_imm_data_len(task) != FAST_IMM_LEN || imm == NULL) {
		DOCA_LOG_ERR("%s: message %lu has no immediate data", side->role, (unsigned long)side->received);
		return false;
	}
	memcpy(tag, imm, sizeof(tag));
	for (int i = 0; i < FAST_IMM_LEN; i++)
		if (tag[i] != side->in_tag[i]) {
			DOCA_LOG_ERR("%s: message %lu carries the wrong immediate data", side->role,
				     (unsigned long)side->received);
			return false;
		}
	msg = data;
	seq = fast_seq_of(msg);
	if (seq != side->received) {
		DOCA_LOG_ERR("%s: message %lu arrived where %lu was due", side->role, (unsigned long)seq,
			     (unsigned long)side->received);
		return false;
	}
	for (size_t i = FAST_HEADER_LEN; i < len; i++)
		if (msg[i] != fast_pattern(seq, i, side->in_tag[0])) {
			DOCA_LOG_ERR("%s: message %lu differs at byte %zu", side->role, (unsigned long)seq, i);
			return false;
		}
	return true;
}

/* A message arrived: checked, then the same task is posted again from here. */
static inline void fast_recv_completed(struct doca_comch_consumer_task_post_recv *task,
				       union doca_data task_user_data, union doca_data ctx_user_data)
{
	struct fast_side *side = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_consumer_task_post_recv_as_task(task);
	uint32_t k = (uint32_t)task_user_data.u64;
	doca_error_t result;

	side->recv_posted[k] = false;
	if (side->received < side->count && fast_message_ok(side, task)) {
		side->received++;
	} else {
		if (side->received >= side->count)
			DOCA_LOG_ERR("%s: a message beyond the %lu expected", side->role, (unsigned long)side->count);
		side->bad++;
	}
	doca_buf_reset_data_len(doca_comch_consumer_task_post_recv_get_buf(task));
	result = doca_task_submit(t);
	if (result == DOCA_SUCCESS) {
		side->recv_posted[k] = true;
		return;
	}
	DOCA_LOG_ERR("%s: Failed to post receive %u again: %s", side->role, k, doca_error_get_descr(result));
	side->errors++;
	doca_task_free(t);
	side->recv_tasks[k] = NULL;
}

/* A receive came back with an error: a stop flushes the posted ones, which are freed here. */
static inline void fast_recv_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
				    union doca_data ctx_user_data)
{
	struct fast_side *side = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_consumer_task_post_recv_as_task(task);
	uint32_t k = (uint32_t)task_user_data.u64;

	if (side->recvs_freed) {
		/* The program freed its posted receives: none may come back. Do not touch the task. */
		side->freed_callbacks++;
		return;
	}
	side->recv_posted[k] = false;
	if (side->stopping) {
		side->flushed_recvs++;
	} else {
		side->errors++;
		DOCA_LOG_ERR("%s: receive %u failed: %s", side->role, k, doca_error_get_descr(doca_task_get_status(t)));
	}
	doca_task_free(t);
	side->recv_tasks[k] = NULL;
}

/* The consumer is RUNNING: every receive is posted from here. */
static inline void fast_consumer_state_changed(const union doca_data user_data, struct doca_ctx *ctx,
					       enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct fast_side *side = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	side->consumer_state = next_state;
	if (next_state == DOCA_CTX_STATE_IDLE && !side->stopping) {
		DOCA_LOG_WARN("%s: the consumer fell back to IDLE", side->role);
		side->consumer_fell_back = true;
	}
	if (next_state != DOCA_CTX_STATE_RUNNING)
		return;
	for (uint32_t k = 0; k < FAST_RECV_TASKS; k++) {
		struct doca_task *task;
		doca_error_t result = doca_comch_consumer_task_post_recv_alloc_init(side->consumer,
										    side->recv_bufs[k],
										    &side->recv_tasks[k]);

		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("%s: Failed to allocate receive %u: %s", side->role, k,
				     doca_error_get_descr(result));
			side->recv_tasks[k] = NULL;
			side->errors++;
			return;
		}
		task = doca_comch_consumer_task_post_recv_as_task(side->recv_tasks[k]);
		doca_task_set_user_data(task, (union doca_data){.u64 = k});
		result = doca_task_submit(task);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("%s: Failed to post receive %u: %s", side->role, k, doca_error_get_descr(result));
			doca_task_free(task);
			side->recv_tasks[k] = NULL;
			side->errors++;
			return;
		}
		side->recv_posted[k] = true;
	}
}

/* `num` buffers of `size` bytes over page-aligned memory, registered with `access` on the device. */
static inline doca_error_t fast_memory_create(struct fast_side *side, uint32_t num, bool with_data, uint32_t access,
					      uint8_t **mem, struct doca_mmap **mmap, struct doca_buf_inventory **inv,
					      struct doca_buf **bufs)
{
	size_t len = (num * side->size + FAST_MEM_ALIGN - 1) / FAST_MEM_ALIGN * FAST_MEM_ALIGN;
	void *addr = NULL;
	doca_error_t result;

	if (posix_memalign(&addr, FAST_MEM_ALIGN, len) != 0) {
		DOCA_LOG_ERR("%s: Failed to allocate %zu bytes", side->role, len);
		return DOCA_ERROR_NO_MEMORY;
	}
	memset(addr, 0, len);
	*mem = addr;
	result = doca_mmap_create(mmap);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to create mmap: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	result = doca_mmap_set_memrange(*mmap, addr, len);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_set_permissions(*mmap, access);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_add_dev(*mmap, side->dev);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_start(*mmap);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to start mmap: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	result = doca_buf_inventory_create(num, inv);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to create buffer inventory: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	result = doca_buf_inventory_start(*inv);
	for (uint32_t i = 0; i < num && result == DOCA_SUCCESS; i++) {
		uint8_t *at = *mem + i * side->size;

		result = with_data ? doca_buf_inventory_buf_get_by_data(*inv, *mmap, at, side->size, &bufs[i]) :
				     doca_buf_inventory_buf_get_by_addr(*inv, *mmap, at, side->size, &bufs[i]);
	}
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("%s: Failed to get buffers: %s", side->role, doca_error_get_descr(result));
	return result;
}

static inline void fast_memory_destroy(struct fast_side *side, uint32_t num, uint8_t **mem, struct doca_mmap **mmap,
				       struct doca_buf_inventory **inv, struct doca_buf **bufs)
{
	for (uint32_t i = 0; i < num; i++)
		if (bufs[i] != NULL) {
			if (doca_buf_dec_refcount(bufs[i], NULL) != DOCA_SUCCESS)
				side->errors++;
			bufs[i] = NULL;
		}
	if (*inv != NULL && doca_buf_inventory_destroy(*inv) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to destroy buffer inventory", side->role);
		side->errors++;
	}
	if (*mmap != NULL && doca_mmap_destroy(*mmap) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to destroy mmap", side->role);
		side->errors++;
	}
	free(*mem);
	*inv = NULL;
	*mmap = NULL;
	*mem = NULL;
}

/*
 * A producer and a consumer on the connection. The producer's start answers DOCA_SUCCESS; the
 * consumer's DOCA_ERROR_IN_PROGRESS, with RUNNING (and the receives) in its state callback.
 */
static inline doca_error_t fast_side_start(struct fast_side *side, struct doca_comch_connection *connection)
{
	union doca_data user_data = {.ptr = side};
	struct doca_ctx *ctx;
	doca_error_t result;

	/* The peer's producer writes into the receive memory across PCI. */
	result = fast_memory_create(side, FAST_RECV_TASKS, false, DOCA_ACCESS_FLAG_PCI_READ_WRITE, &side->recv_mem,
				    &side->recv_mmap, &side->recv_inv, side->recv_bufs);
	if (result == DOCA_SUCCESS)
		result = fast_memory_create(side, FAST_SENDS_IN_FLIGHT, true, DOCA_ACCESS_FLAG_PCI_READ_WRITE,
					    &side->send_mem, &side->send_mmap, &side->send_inv, side->send_bufs);
	if (result != DOCA_SUCCESS)
		return result;

	result = doca_comch_producer_create(connection, &side->producer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to create producer: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_producer_as_ctx(side->producer);
	result = doca_comch_producer_task_send_set_conf(side->producer, fast_send_completed, fast_send_failed,
							FAST_SEND_TASKS);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to configure %u send tasks: %s", side->role, FAST_SEND_TASKS,
			     doca_error_get_descr(result));
		return result;
	}
	result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(side->pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to set up producer: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	result = doca_ctx_start(ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to start producer: %s", side->role, doca_error_get_descr(result));
		return result;
	}

	result = doca_comch_consumer_create(connection, side->recv_mmap, &side->consumer);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to create consumer: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	ctx = doca_comch_consumer_as_ctx(side->consumer);
	result = doca_comch_consumer_set_imm_data_len(side->consumer, FAST_IMM_LEN);
	if (result == DOCA_SUCCESS)
		result = doca_comch_consumer_task_post_recv_set_conf(side->consumer, fast_recv_completed,
								     fast_recv_failed, FAST_RECV_TASKS);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_user_data(ctx, user_data);
	if (result == DOCA_SUCCESS)
		result = doca_ctx_set_state_changed_cb(ctx, fast_consumer_state_changed);
	if (result == DOCA_SUCCESS)
		result = doca_pe_connect_ctx(side->pe, ctx);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("%s: Failed to set up consumer: %s", side->role, doca_error_get_descr(result));
		return result;
	}
	result = doca_ctx_start(ctx);
	if (result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("%s: Failed to start consumer: %s (expected %s)", side->role, doca_error_get_name(result),
			     doca_error_get_name(DOCA_ERROR_IN_PROGRESS));
		return result == DOCA_SUCCESS ? DOCA_ERROR_UNEXPECTED : result;
	}
	return DOCA_SUCCESS;
}

/* The remote consumer is known and our consumer runs with its receives posted. */
static inline bool fast_side_ready(const struct fast_side *side)
{
	return side->remote_known && side->consumer_state == DOCA_CTX_STATE_RUNNING;
}

/* Waiting for readiness is over: ready, or it cannot come (an error, the consumer back at IDLE). */
static inline bool fast_side_ready_settled(const struct fast_side *side)
{
	return fast_side_ready(side) || side->errors > 0 || side->consumer_fell_back;
}

/* Logs why a side did not become ready. */
static inline void fast_side_log_not_ready(const struct fast_side *side, bool timed_out)
{
	DOCA_LOG_ERR("%s: the fast path did not come up%s (remote consumer %s, local consumer state %d, %lu errors)",
		     side->role, timed_out ? " in time" : "", side->remote_known ? "announced" : "not announced",
		     side->consumer_state, (unsigned long)side->errors);
}

/* Allocates the send tasks and submits the first message on each; the callbacks do the rest. */
static inline doca_error_t fast_side_start_sending(struct fast_side *side)
{
	uint32_t num = side->count < FAST_SENDS_IN_FLIGHT ? (uint32_t)side->count : FAST_SENDS_IN_FLIGHT;

	for (uint32_t k = 0; k < num; k++) {
		doca_error_t result = doca_comch_producer_task_send_alloc_init(
			side->producer, side->send_bufs[k], (uint8_t *)side->out_tag, FAST_IMM_LEN,
			side->remote_consumer_id, &side->send_tasks[k]);

		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("%s: Failed to allocate send task %u: %s", side->role, k,
				     doca_error_get_descr(result));
			side->send_tasks[k] = NULL;
			return result;
		}
		result = fast_send_next(side, k);
		if (result != DOCA_SUCCESS) {
			doca_task_free(doca_comch_producer_task_send_as_task(side->send_tasks[k]));
			side->send_tasks[k] = NULL;
			return result;
		}
	}
	return DOCA_SUCCESS;
}

/* Every message received and every send completed. */
static inline bool fast_side_done(const struct fast_side *side)
{
	return side->received >= side->count && side->sends_done >= side->count;
}

/*
 * Stops the consumer, then the producer, and destroys them and their memory. With free_posted,
 * the receives still posted are freed with doca_task_free first (no callback may return them);
 * otherwise the stop flushes them back through the error callback, which frees them.
 */
static inline doca_error_t fast_side_stop(struct fast_side *side, bool free_posted)
{
	doca_error_t result = DOCA_SUCCESS, step;

	side->stopping = true;
	if (side->consumer != NULL) {
		if (free_posted) {
			uint32_t freed = 0;

			for (uint32_t k = 0; k < FAST_RECV_TASKS; k++)
				if (side->recv_posted[k]) {
					doca_task_free(doca_comch_consumer_task_post_recv_as_task(side->recv_tasks[k]));
					side->recv_posted[k] = false;
					side->recv_tasks[k] = NULL;
					freed++;
				}
			side->recvs_freed = true;
			DOCA_LOG_INFO("%s: freed %u posted receives before stopping the consumer", side->role, freed);
		}
		step = fast_stop_ctx(side->pe, doca_comch_consumer_as_ctx(side->consumer), "consumer");
		for (uint32_t k = 0; k < FAST_RECV_TASKS && step == DOCA_SUCCESS; k++)
			if (side->recv_posted[k]) {
				DOCA_LOG_ERR("%s: receive %u neither completed nor came back from the stop",
					     side->role, k);
				side->errors++;
			}
		if (step == DOCA_SUCCESS) {
			step = doca_comch_consumer_destroy(side->consumer);
			if (step != DOCA_SUCCESS)
				DOCA_LOG_ERR("%s: Failed to destroy consumer: %s", side->role,
					     doca_error_get_descr(step));
			side->consumer = NULL;
		}
		if (step != DOCA_SUCCESS)
			result = step;
	}
	if (side->producer != NULL) {
		step = fast_stop_ctx(side->pe, doca_comch_producer_as_ctx(side->producer), "producer");
		if (step == DOCA_SUCCESS) {
			step = doca_comch_producer_destroy(side->producer);
			if (step != DOCA_SUCCESS)
				DOCA_LOG_ERR("%s: Failed to destroy producer: %s", side->role,
					     doca_error_get_descr(step));
			side->producer = NULL;
		}
		if (step != DOCA_SUCCESS)
			result = step;
	}
	if (side->consumer == NULL && side->producer == NULL) {
		fast_memory_destroy(side, FAST_SENDS_IN_FLIGHT, &side->send_mem, &side->send_mmap, &side->send_inv,
				    side->send_bufs);
		fast_memory_destroy(side, FAST_RECV_TASKS, &side->recv_mem, &side->recv_mmap, &side->recv_inv,
				    side->recv_bufs);
	}
	return result;
}

/* The verdict: every message received once, in order, intact; every send completed; no errors. */
static inline bool fast_side_report(const struct fast_side *side)
{
	bool ok = side->received == side->count && side->next_seq == side->count &&
		  side->sends_done == side->count && side->bad == 0 && side->errors == 0 &&
		  side->freed_callbacks == 0;

	DOCA_LOG_INFO("%s: sent %lu/%lu (%lu completed), received %lu/%lu, %lu bad, %lu errors, %lu receives "
		      "flushed, %lu callbacks for freed tasks: %s",
		      side->role, (unsigned long)side->next_seq, (unsigned long)side->count,
		      (unsigned long)side->sends_done, (unsigned long)side->received, (unsigned long)side->count,
		      (unsigned long)side->bad, (unsigned long)side->errors, (unsigned long)side->flushed_recvs,
		      (unsigned long)side->freed_callbacks, ok ? "PASS" : "FAIL");
	return ok;
}

/* Logs the SDK the program was built against and the library it runs with. */
static inline void fast_log_version(const char *program)
{
	const char *runtime = doca_version_runtime();

	DOCA_LOG_INFO("%s: built against DOCA %s, running with %s", program, doca_version(), runtime);
	if (strcmp(runtime, DOCA_VERSION_STRING) != 0)
		DOCA_LOG_WARN("%s: the library's version differs from the headers'", program);
}

#endif /* DPAKIT_TESTS_COMCH_FAST_COMMON_H */
