/*
 * DMA memcpy tasks on a progress engine in event mode, written as DOCA's samples write programs:
 * one mmap over memory the program allocated, a buffer inventory, sources taken with
 * buf_get_by_data and destinations with buf_get_by_addr; the PE's notification handle is waited
 * on with epoll before each doca_pe_progress.
 *
 * Phase 1: NUM_TASKS tasks copy ROUNDS rounds each: every completion callback checks the bytes
 * that landed, refills the source, empties the destination and resubmits the task; the last
 * callback frees its task and stops the context (IDLE at once). Phase 2: a short copy and two
 * long ones (several progress calls each); the short one's callback stops the context with the
 * long ones in flight, which come back through the error callback (IO_FAILED) while the context
 * goes STOPPING -> IDLE; one is resubmitted from its error callback and flushed again. Along
 * the way, misuse is answered with DOCA's codes. Exits non-zero, naming each failed check, if
 * anything differs.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dma.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_pe.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(DMA_PE_EVENT);

#define NUM_TASKS 8
#define ROUNDS 64
#define BLOCK 4096
#define LONG_COPY (3u << 20) /* several progress calls of the soft device's engine */
#define MEMORY (2 * NUM_TASKS * BLOCK + 4 * (size_t)LONG_COPY)
#define WAIT_MS 5000

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

struct state {
	struct doca_dev *dev;
	struct doca_mmap *mmap;
	struct doca_buf_inventory *inventory;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_ctx *ctx;
	uint8_t *memory;
	enum doca_ctx_states ctx_state;
	int running_seen;
	int stopping_seen;
	int wakes;
	/* phase 1 */
	int rounds[NUM_TASKS];
	int tasks_left;
	/* phase 2 */
	int flushed;
	int resubmitted;
	int phase2_left;
};

static uint8_t pattern(int task, int round)
{
	return (uint8_t)(1 + task * 31 + round * 7);
}

static uint8_t *src_block(struct state *s, int task)
{
	return s->memory + (size_t)task * BLOCK;
}

static uint8_t *dst_block(struct state *s, int task)
{
	return s->memory + (size_t)(NUM_TASKS + task) * BLOCK;
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx,
			  enum doca_ctx_states prev_state, enum doca_ctx_states next_state)
{
	struct state *s = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	s->ctx_state = next_state;
	switch (next_state) {
	case DOCA_CTX_STATE_RUNNING:
		DOCA_LOG_INFO("DMA context is running");
		s->running_seen++;
		break;
	case DOCA_CTX_STATE_STOPPING:
		DOCA_LOG_INFO("DMA context is stopping: tasks in flight are flushed");
		s->stopping_seen++;
		break;
	case DOCA_CTX_STATE_IDLE:
		DOCA_LOG_INFO("DMA context is idle");
		break;
	default:
		break;
	}
}

/* Returns the task's buffers to the inventory and the task to its pool. */
static void free_task(struct doca_dma_task_memcpy *task)
{
	struct doca_buf *src = (struct doca_buf *)doca_dma_task_memcpy_get_src(task);
	struct doca_buf *dst = doca_dma_task_memcpy_get_dst(task);

	CHECK(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	doca_task_free(doca_dma_task_memcpy_as_task(task));
}

/* Phase 1: check what landed, then go again or finish. */
static void copied(struct doca_dma_task_memcpy *task, union doca_data task_user_data,
		   union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;
	int id = (int)task_user_data.u64;
	struct doca_buf *dst = doca_dma_task_memcpy_get_dst(task);
	uint8_t expected = pattern(id, s->rounds[id]);
	void *data = NULL;
	size_t len = 0;

	CHECK(doca_buf_get_data(dst, &data), DOCA_SUCCESS);
	CHECK(doca_buf_get_data_len(dst, &len), DOCA_SUCCESS);
	if (data != dst_block(s, id) || len != BLOCK) {
		DOCA_LOG_ERR("task %d: destination data %p+%zu, expected %p+%d", id, data, len,
			     (void *)dst_block(s, id), BLOCK);
		failures++;
	}
	for (size_t i = 0; i < BLOCK; i++) {
		if (dst_block(s, id)[i] != expected) {
			DOCA_LOG_ERR("task %d round %d: byte %zu is %u, expected %u", id, s->rounds[id], i,
				     dst_block(s, id)[i], expected);
			failures++;
			break;
		}
	}
	if (++s->rounds[id] < ROUNDS) {
		/* The task is the program's again: refill, empty the destination, resubmit. */
		memset(src_block(s, id), pattern(id, s->rounds[id]), BLOCK);
		CHECK(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
		CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
		return;
	}
	free_task(task);
	if (--s->tasks_left == 0)
		CHECK(doca_ctx_stop(s->ctx), DOCA_SUCCESS); /* nothing outstanding: IDLE at once */
}

/* Phase 2: the short copy stops the context while the long ones are in flight. */
static void phase2_copied(struct doca_dma_task_memcpy *task, union doca_data task_user_data,
			  union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;

	if (task_user_data.u64 != 100) {
		DOCA_LOG_ERR("task %lu completed, expected the long copies to be flushed",
			     (unsigned long)task_user_data.u64);
		failures++;
	}
	free_task(task);
	s->phase2_left--;
	CHECK(doca_ctx_stop(s->ctx), DOCA_ERROR_IN_PROGRESS);
	CHECK(doca_ctx_stop(s->ctx), DOCA_ERROR_IN_PROGRESS);
}

static void failed(struct doca_dma_task_memcpy *task, union doca_data task_user_data,
		   union doca_data ctx_user_data)
{
	struct state *s = ctx_user_data.ptr;
	doca_error_t status = doca_task_get_status(doca_dma_task_memcpy_as_task(task));

	if (status != DOCA_ERROR_IO_FAILED || task_user_data.u64 < 200) {
		DOCA_LOG_ERR("task %lu failed with %s", (unsigned long)task_user_data.u64,
			     doca_error_get_name(status));
		failures++;
	}
	s->flushed++;
	if (task_user_data.u64 == 201 && !s->resubmitted) {
		/* Accepted while the context stops, and flushed by the next progress. */
		s->resubmitted = 1;
		CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
		return;
	}
	s->phase2_left--;
	free_task(task);
}

/*
 * Progresses until `*left` reaches 0 and the context is IDLE, event-driven: arm the PE's
 * notification handle, sleep in epoll until it fires, clear it, progress once. Every completion
 * (and every step of a long copy) is reached through the handle.
 */
static doca_error_t run_until_idle(struct state *s, int epoll_fd, int *left)
{
	struct epoll_event event;

	while (*left != 0 || s->ctx_state != DOCA_CTX_STATE_IDLE) {
		CHECK(doca_pe_request_notification(s->pe), DOCA_SUCCESS);
		int n = epoll_wait(epoll_fd, &event, 1, WAIT_MS);
		if (n < 0 && errno != EINTR) {
			DOCA_LOG_ERR("epoll_wait failed: %s", strerror(errno));
			return DOCA_ERROR_OPERATING_SYSTEM;
		}
		if (n == 0) {
			DOCA_LOG_ERR("no notification within %d ms (%d tasks left)", WAIT_MS, *left);
			return DOCA_ERROR_TIME_OUT;
		}
		s->wakes++;
		/* The handle argument is not used on Linux: DOCA's pe_event sample passes 0. */
		CHECK(doca_pe_clear_notification(s->pe, 0), DOCA_SUCCESS);
		(void)doca_pe_progress(s->pe);
	}
	/* Nothing is left: an armed handle stays quiet. */
	CHECK(doca_pe_request_notification(s->pe), DOCA_SUCCESS);
	if (epoll_wait(epoll_fd, &event, 1, 0) != 0) {
		DOCA_LOG_ERR("the notification handle fired with nothing to progress");
		failures++;
	}
	CHECK(doca_pe_clear_notification(s->pe, 0), DOCA_SUCCESS);
	return DOCA_SUCCESS;
}

static doca_error_t get_pair(struct state *s, uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
			     struct doca_buf **src_buf, struct doca_buf **dst_buf)
{
	doca_error_t result = doca_buf_inventory_buf_get_by_data(s->inventory, s->mmap, src, src_len, src_buf);

	if (result == DOCA_SUCCESS)
		result = doca_buf_inventory_buf_get_by_addr(s->inventory, s->mmap, dst, dst_len, dst_buf);
	return result;
}

/* Misuse on a running context, each answered with DOCA's code. */
static void check_rules(struct state *s)
{
	struct doca_dma_task_memcpy *tasks[NUM_TASKS + 1], *task;
	struct doca_buf *src, *dst, *small, *empty, *overlap;
	union doca_data none = {0};
	uint32_t n = 0;

	CHECK(doca_dma_task_memcpy_set_conf(s->dma, copied, failed, NUM_TASKS), DOCA_ERROR_BAD_STATE);
	CHECK(doca_dma_destroy(s->dma), DOCA_ERROR_IN_USE);
	CHECK(doca_dma_cap_get_max_num_tasks(s->dma, &n), DOCA_SUCCESS);
	if (n < NUM_TASKS) {
		DOCA_LOG_ERR("max_num_tasks %u", n);
		failures++;
	}

	if (get_pair(s, src_block(s, 0), BLOCK, dst_block(s, 0), BLOCK, &src, &dst) != DOCA_SUCCESS ||
	    doca_buf_inventory_buf_get_by_addr(s->inventory, s->mmap, dst_block(s, 1), 100, &small) !=
		    DOCA_SUCCESS ||
	    doca_buf_inventory_buf_get_by_addr(s->inventory, s->mmap, src_block(s, 1), BLOCK, &empty) !=
		    DOCA_SUCCESS ||
	    doca_buf_inventory_buf_get_by_addr(s->inventory, s->mmap, src_block(s, 0) + 8, BLOCK, &overlap) !=
		    DOCA_SUCCESS) {
		failures++;
		return;
	}
	/* A destination too small, then the right one set on the same task. */
	CHECK(doca_dma_task_memcpy_alloc_init(s->dma, src, small, none, &task), DOCA_SUCCESS);
	CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_ERROR_INVALID_VALUE);
	/* No data to copy. */
	doca_dma_task_memcpy_set_src(task, empty);
	doca_dma_task_memcpy_set_dst(task, dst);
	CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_ERROR_INVALID_VALUE);
	/* Overlap: the source's data and the room after the destination's data. */
	doca_dma_task_memcpy_set_src(task, src);
	doca_dma_task_memcpy_set_dst(task, overlap);
	CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_ERROR_INVALID_VALUE);
	doca_dma_task_memcpy_set_dst(task, dst);
	if (doca_dma_task_memcpy_get_src(task) != src || doca_dma_task_memcpy_get_dst(task) != dst) {
		DOCA_LOG_ERR("get_src/get_dst do not return what set_src/set_dst set");
		failures++;
	}
	doca_task_free(doca_dma_task_memcpy_as_task(task));

	/* The pool holds NUM_TASKS tasks. */
	for (int i = 0; i < NUM_TASKS; i++)
		CHECK(doca_dma_task_memcpy_alloc_init(s->dma, src, dst, none, &tasks[i]), DOCA_SUCCESS);
	CHECK(doca_dma_task_memcpy_alloc_init(s->dma, src, dst, none, &tasks[NUM_TASKS]),
	      DOCA_ERROR_NO_MEMORY);
	for (int i = 0; i < NUM_TASKS; i++)
		doca_task_free(doca_dma_task_memcpy_as_task(tasks[i]));
	CHECK(doca_dma_task_memcpy_alloc_init(s->dma, NULL, NULL, none, &task), DOCA_SUCCESS);
	CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_ERROR_INVALID_VALUE);
	doca_task_free(doca_dma_task_memcpy_as_task(task));

	CHECK(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	CHECK(doca_buf_dec_refcount(small, NULL), DOCA_SUCCESS);
	CHECK(doca_buf_dec_refcount(empty, NULL), DOCA_SUCCESS);
	CHECK(doca_buf_dec_refcount(overlap, NULL), DOCA_SUCCESS);
}

/* Creates, configures and starts the DMA context with `done` as its completion callback. */
static doca_error_t start_dma(struct state *s, doca_dma_task_memcpy_completion_cb_t done)
{
	doca_error_t result;

	CHECK(doca_dma_task_memcpy_set_conf(s->dma, done, failed, NUM_TASKS), DOCA_SUCCESS);
	result = doca_ctx_start(s->ctx);
	/* DOCA's DMA context is RUNNING at once; a context that starts through progress would say
	 * IN_PROGRESS and report RUNNING to the state callback later. */
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("Failed to start the DMA context: %s", doca_error_get_descr(result));
		return result;
	}
	return DOCA_SUCCESS;
}

int main(void)
{
	struct state s = {.ctx_state = DOCA_CTX_STATE_IDLE};
	struct doca_devinfo **list;
	struct doca_log_backend *sdk_log;
	struct doca_dma_task_memcpy *task;
	struct doca_buf *src, *dst;
	union doca_data data = {.ptr = &s};
	struct epoll_event in = {.events = EPOLLIN};
	doca_notification_handle_t handle = doca_event_invalid_handle;
	uint64_t max_size = 0;
	uint32_t n = 0, max_list = 0;
	int epoll_fd;

	if (doca_log_backend_create_standard() != DOCA_SUCCESS ||
	    doca_log_backend_create_with_file_sdk(stderr, &sdk_log) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	DOCA_LOG_INFO("DOCA SDK %s", doca_version());

	/* A device with DMA, and the capabilities DOCA's samples ask for. */
	CHECK(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	for (uint32_t i = 0; i < n && s.dev == NULL; i++) {
		if (doca_dma_cap_task_memcpy_is_supported(list[i]) == DOCA_SUCCESS)
			CHECK(doca_dev_open(list[i], &s.dev), DOCA_SUCCESS);
	}
	CHECK(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
	if (s.dev == NULL)
		return EXIT_FAILURE;
	CHECK(doca_dma_cap_task_memcpy_get_max_buf_size(doca_dev_as_devinfo(s.dev), &max_size), DOCA_SUCCESS);
	CHECK(doca_dma_cap_task_memcpy_get_max_buf_list_len(doca_dev_as_devinfo(s.dev), &max_list),
	      DOCA_SUCCESS);
	if (max_size < LONG_COPY || max_list < 2) {
		DOCA_LOG_ERR("max_buf_size %lu, max_buf_list_len %u", (unsigned long)max_size, max_list);
		failures++;
	}

	/* Local memory, one mmap over it (default permissions allow local DMA reads and writes). */
	s.memory = malloc(MEMORY);
	if (s.memory == NULL)
		return EXIT_FAILURE;
	memset(s.memory, 0, MEMORY);
	CHECK(doca_mmap_create(&s.mmap), DOCA_SUCCESS);
	CHECK(doca_mmap_set_memrange(s.mmap, s.memory, MEMORY), DOCA_SUCCESS);
	CHECK(doca_mmap_add_dev(s.mmap, s.dev), DOCA_SUCCESS);
	CHECK(doca_mmap_start(s.mmap), DOCA_SUCCESS);
	CHECK(doca_buf_inventory_create(2 * NUM_TASKS + 4, &s.inventory), DOCA_SUCCESS);
	CHECK(doca_buf_inventory_start(s.inventory), DOCA_SUCCESS);

	/* The PE and its notification handle in an epoll set. */
	CHECK(doca_pe_create(&s.pe), DOCA_SUCCESS);
	CHECK(doca_pe_get_notification_handle(s.pe, &handle), DOCA_SUCCESS);
	epoll_fd = epoll_create1(0);
	if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, handle, &in) != 0)
		return EXIT_FAILURE;

	CHECK(doca_dma_create(s.dev, &s.dma), DOCA_SUCCESS);
	s.ctx = doca_dma_as_ctx(s.dma);
	if (s.ctx == NULL)
		return EXIT_FAILURE;
	CHECK(doca_ctx_set_state_changed_cb(s.ctx, state_changed), DOCA_SUCCESS);
	CHECK(doca_ctx_set_user_data(s.ctx, data), DOCA_SUCCESS);
	CHECK(doca_ctx_start(s.ctx), DOCA_ERROR_BAD_STATE); /* no tasks configured */
	CHECK(doca_pe_connect_ctx(s.pe, s.ctx), DOCA_SUCCESS);
	CHECK(doca_dma_task_memcpy_set_conf(s.dma, copied, failed, 0), DOCA_ERROR_INVALID_VALUE);

	/* Phase 1: NUM_TASKS tasks, ROUNDS rounds each, resubmitted from their callbacks. */
	if (start_dma(&s, copied) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	if (s.running_seen != 1 || s.ctx_state != DOCA_CTX_STATE_RUNNING) {
		DOCA_LOG_ERR("the state callback did not see RUNNING");
		failures++;
	}
	check_rules(&s);
	s.tasks_left = NUM_TASKS;
	for (int i = 0; i < NUM_TASKS; i++) {
		union doca_data id = {.u64 = (uint64_t)i};

		memset(src_block(&s, i), pattern(i, 0), BLOCK);
		if (get_pair(&s, src_block(&s, i), BLOCK, dst_block(&s, i), BLOCK, &src, &dst) != DOCA_SUCCESS)
			return EXIT_FAILURE;
		CHECK(doca_dma_task_memcpy_alloc_init(s.dma, src, dst, id, &task), DOCA_SUCCESS);
		CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
	}
	if (run_until_idle(&s, epoll_fd, &s.tasks_left) != DOCA_SUCCESS)
		failures++;
	if (s.wakes < ROUNDS) {
		DOCA_LOG_ERR("%d rounds took %d wake-ups of the notification handle", ROUNDS, s.wakes);
		failures++;
	}
	for (int i = 0; i < NUM_TASKS; i++) {
		if (s.rounds[i] != ROUNDS) {
			DOCA_LOG_ERR("task %d ran %d rounds", i, s.rounds[i]);
			failures++;
		}
	}

	/* Phase 2: a stop with long copies in flight. */
	if (start_dma(&s, phase2_copied) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	uint8_t *long_src = s.memory + 2 * NUM_TASKS * BLOCK;
	s.phase2_left = 3;
	for (int i = 0; i < 3; i++) {
		size_t len = i == 0 ? 64 : LONG_COPY;
		union doca_data id = {.u64 = i == 0 ? 100 : 200 + (uint64_t)i};
		/* The short copy between blocks of phase 1, the long ones each from one quarter of
		 * the long region to the next. */
		uint8_t *from = i == 0 ? src_block(&s, 0) : long_src + (size_t)2 * (i - 1) * LONG_COPY;
		uint8_t *to = i == 0 ? dst_block(&s, 0) : from + LONG_COPY;
		if (get_pair(&s, from, len, to, len, &src, &dst) != DOCA_SUCCESS)
			return EXIT_FAILURE;
		CHECK(doca_dma_task_memcpy_alloc_init(s.dma, src, dst, id, &task), DOCA_SUCCESS);
		CHECK(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
	}
	if (run_until_idle(&s, epoll_fd, &s.phase2_left) != DOCA_SUCCESS)
		failures++;
	if (s.flushed != 3 || s.stopping_seen != 1) {
		DOCA_LOG_ERR("%d tasks flushed, STOPPING seen %d times (expected 3, 1)", s.flushed,
			     s.stopping_seen);
		failures++;
	}

	/* Teardown in DOCA's order. */
	CHECK(doca_dma_destroy(s.dma), DOCA_SUCCESS);
	CHECK(doca_pe_destroy(s.pe), DOCA_SUCCESS);
	CHECK(doca_buf_inventory_destroy(s.inventory), DOCA_SUCCESS);
	CHECK(doca_mmap_destroy(s.mmap), DOCA_SUCCESS);
	CHECK(doca_dev_close(s.dev), DOCA_SUCCESS);
	close(epoll_fd);
	free(s.memory);

	if (failures) {
		DOCA_LOG_ERR("%d check(s) failed", failures);
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("DMA: %d tasks x %d rounds in %d wake-ups of the PE's notification handle, a "
		      "stop with copies in flight, every check passed",
		      NUM_TASKS, ROUNDS, s.wakes);
	return EXIT_SUCCESS;
}
