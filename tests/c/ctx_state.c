/*
 * The context state machine and user data, driven from C against DOCA's API.
 *
 * A CPU consumer of a DPA -> CPU MsgQ and a CPU producer of a CPU -> DPA MsgQ (whose DPA
 * consumer never posts a receive, so sends wait) are started, given tasks and stopped with the
 * tasks outstanding: doca_ctx_stop answers IN_PROGRESS, the tasks come back through their error
 * callbacks with their user data, and the contexts reach IDLE through doca_pe_progress once
 * every task is freed. Along the way, misuse is answered with DOCA's codes. Exits non-zero,
 * naming each failed check, if anything differs.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <doca_comch_consumer.h>
#include <doca_comch_msgq.h>
#include <doca_comch_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dpa.h>
#include <doca_error.h>
#include <doca_pe.h>

extern struct doca_dpa_app *dpakit_kernels;
extern doca_dpa_func_t echo;

static int failures;

#define EXPECT(call, code)                                                                         \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			fprintf(stderr, "ctx_state:%d: %s returned %s, expected %s\n", __LINE__,   \
				#call, doca_error_get_name(got_), doca_error_get_name(code));      \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define TRUE(cond)                                                                                 \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "ctx_state:%d: %s does not hold\n", __LINE__, #cond);      \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* What the callbacks saw. */
struct seen {
	int transitions[8][2];
	int num_transitions;
	uint64_t ctx_user_data;
	uint64_t flushed_task_user_data[8];
	int num_flushed;
	doca_error_t flushed_status;
};

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx,
			  enum doca_ctx_states prev, enum doca_ctx_states next)
{
	struct seen *seen = user_data.ptr;

	(void)ctx;
	if (seen->num_transitions < 8) {
		seen->transitions[seen->num_transitions][0] = (int)prev;
		seen->transitions[seen->num_transitions][1] = (int)next;
		seen->num_transitions++;
	}
}

static void record_flushed(struct seen *seen, struct doca_task *task)
{
	if (seen->num_flushed < 8)
		seen->flushed_task_user_data[seen->num_flushed++] = doca_task_get_user_data(task).u64;
	seen->flushed_status = doca_task_get_status(task);
	doca_task_free(task);
}

static void recv_ok(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
		    union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
}

static void recv_err(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
		     union doca_data ctx_user_data)
{
	struct seen *seen = ctx_user_data.ptr;

	(void)task_user_data;
	record_flushed(seen, doca_comch_consumer_task_post_recv_as_task(task));
}

static void send_ok(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
		    union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_producer_task_send_as_task(task));
}

static void send_err(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
		     union doca_data ctx_user_data)
{
	struct seen *seen = ctx_user_data.ptr;

	TRUE(task_user_data.u64 >= 200);
	record_flushed(seen, doca_comch_producer_task_send_as_task(task));
}

static struct doca_dev *open_host_pf(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	uint32_t n;

	EXPECT(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	for (uint32_t i = 0; i < n && dev == NULL; i++) {
		uint8_t equal = 0;

		EXPECT(doca_devinfo_is_equal_pci_addr(list[i], "b1:00.0", &equal), DOCA_SUCCESS);
		if (equal)
			EXPECT(doca_dev_open(list[i], &dev), DOCA_SUCCESS);
	}
	EXPECT(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
	if (dev == NULL) {
		fprintf(stderr, "ctx_state: no device at b1:00.0\n");
		exit(EXIT_FAILURE);
	}
	return dev;
}

/* A stop with tasks outstanding: IN_PROGRESS, error callbacks, IDLE once everything is freed. */
static void stop_with_outstanding_tasks(struct doca_pe *pe, struct doca_ctx *ctx, struct seen *seen,
					int expected_flushed)
{
	enum doca_ctx_states state;

	EXPECT(doca_ctx_stop(ctx), DOCA_ERROR_IN_PROGRESS);
	EXPECT(doca_ctx_get_state(ctx, &state), DOCA_SUCCESS);
	TRUE(state == DOCA_CTX_STATE_STOPPING);
	for (int i = 0; i < 1000 && state != DOCA_CTX_STATE_IDLE; i++) {
		doca_pe_progress(pe);
		EXPECT(doca_ctx_get_state(ctx, &state), DOCA_SUCCESS);
	}
	TRUE(state == DOCA_CTX_STATE_IDLE);
	TRUE(seen->num_flushed == expected_flushed);
	TRUE(seen->flushed_status == DOCA_ERROR_IO_FAILED);
	TRUE(seen->num_transitions == 3);
	TRUE(seen->transitions[0][0] == DOCA_CTX_STATE_IDLE && seen->transitions[0][1] == DOCA_CTX_STATE_RUNNING);
	TRUE(seen->transitions[1][0] == DOCA_CTX_STATE_RUNNING && seen->transitions[1][1] == DOCA_CTX_STATE_STOPPING);
	TRUE(seen->transitions[2][0] == DOCA_CTX_STATE_STOPPING && seen->transitions[2][1] == DOCA_CTX_STATE_IDLE);
}

int main(void)
{
	struct doca_dev *dev = open_host_pf();
	struct doca_dpa *dpa;
	struct doca_pe *pe;

	EXPECT(doca_dpa_create(dev, &dpa), DOCA_SUCCESS);
	EXPECT(doca_dpa_start(dpa), DOCA_ERROR_BAD_STATE); /* no app yet */
	EXPECT(doca_dpa_set_app(dpa, dpakit_kernels), DOCA_SUCCESS);
	EXPECT(doca_dpa_start(dpa), DOCA_SUCCESS);
	EXPECT(doca_pe_create(&pe), DOCA_SUCCESS);

	/* The CPU consumer of a DPA -> CPU queue. */
	struct seen consumer_seen = {0};
	union doca_data consumer_data = {.ptr = &consumer_seen};
	struct doca_comch_msgq *from_dpa;
	struct doca_comch_consumer *consumer;
	struct doca_ctx *cctx;

	EXPECT(doca_comch_msgq_create(dev, &from_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_set_dpa_producer(from_dpa, dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_start(from_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_consumer_create(from_dpa, &consumer), DOCA_SUCCESS);
	cctx = doca_comch_consumer_as_ctx(consumer);
	EXPECT(doca_ctx_set_user_data(cctx, consumer_data), DOCA_SUCCESS);
	EXPECT(doca_ctx_set_state_changed_cb(cctx, state_changed), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_task_post_recv_set_conf(consumer, recv_ok, recv_err, 4), DOCA_SUCCESS);
	EXPECT(doca_ctx_start(cctx), DOCA_ERROR_BAD_STATE); /* no PE yet */
	EXPECT(doca_pe_connect_ctx(pe, cctx), DOCA_SUCCESS);
	EXPECT(doca_ctx_start(cctx), DOCA_SUCCESS);
	EXPECT(doca_ctx_start(cctx), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_ctx_set_state_changed_cb(cctx, state_changed), DOCA_ERROR_BAD_STATE);
	for (int i = 0; i < 3; i++) {
		struct doca_comch_consumer_task_post_recv *task;
		struct doca_task *t;

		EXPECT(doca_comch_consumer_task_post_recv_alloc_init(consumer, NULL, &task), DOCA_SUCCESS);
		t = doca_comch_consumer_task_post_recv_as_task(task);
		doca_task_set_user_data(t, (union doca_data){.u64 = 100 + (uint64_t)i});
		EXPECT(doca_task_submit(t), DOCA_SUCCESS);
	}
	stop_with_outstanding_tasks(pe, cctx, &consumer_seen, 3);
	TRUE(consumer_seen.flushed_task_user_data[0] == 100 && consumer_seen.flushed_task_user_data[2] == 102);

	/* The CPU producer of a CPU -> DPA queue whose DPA consumer posts no receive. */
	struct seen producer_seen = {0};
	union doca_data producer_data = {.ptr = &producer_seen};
	struct doca_comch_msgq *to_dpa;
	struct doca_comch_consumer *dpa_consumer;
	struct doca_comch_consumer_completion *comp;
	struct doca_comch_producer *producer;
	struct doca_dpa_thread *thread;
	struct doca_ctx *pctx;
	uint32_t consumer_id;
	uint8_t imm[32];

	EXPECT(doca_dpa_thread_create(dpa, &thread), DOCA_SUCCESS);
	EXPECT(doca_dpa_thread_set_func_arg(thread, &echo, 0), DOCA_SUCCESS);
	EXPECT(doca_dpa_thread_start(thread), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_completion_create(&comp), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_completion_set_max_num_recv(comp, 8), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_completion_set_dpa_thread(comp, thread), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_completion_start(comp), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_create(dev, &to_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_set_dpa_consumer(to_dpa, dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_start(to_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_consumer_create(to_dpa, &dpa_consumer), DOCA_SUCCESS);
	EXPECT(doca_ctx_set_datapath_on_dpa(doca_comch_consumer_as_ctx(dpa_consumer), dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_set_completion(dpa_consumer, comp, 0), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_set_dev_max_num_recv(dpa_consumer, 8), DOCA_SUCCESS);
	EXPECT(doca_ctx_start(doca_comch_consumer_as_ctx(dpa_consumer)), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_get_id(dpa_consumer, &consumer_id), DOCA_SUCCESS);

	EXPECT(doca_comch_msgq_producer_create(to_dpa, &producer), DOCA_SUCCESS);
	pctx = doca_comch_producer_as_ctx(producer);
	EXPECT(doca_ctx_set_user_data(pctx, producer_data), DOCA_SUCCESS);
	EXPECT(doca_ctx_set_state_changed_cb(pctx, state_changed), DOCA_SUCCESS);
	EXPECT(doca_comch_producer_task_send_set_conf(producer, send_ok, send_err, 4), DOCA_SUCCESS);
	EXPECT(doca_pe_connect_ctx(pe, pctx), DOCA_SUCCESS);
	EXPECT(doca_ctx_start(pctx), DOCA_SUCCESS);
	memset(imm, 7, sizeof(imm));
	for (int i = 0; i < 2; i++) {
		struct doca_comch_producer_task_send *task;
		struct doca_task *t;

		EXPECT(doca_comch_producer_task_send_alloc_init(producer, NULL, imm, sizeof(imm), consumer_id,
								&task),
		       DOCA_SUCCESS);
		t = doca_comch_producer_task_send_as_task(task);
		doca_task_set_user_data(t, (union doca_data){.u64 = 200 + (uint64_t)i});
		EXPECT(doca_task_submit(t), DOCA_SUCCESS);
	}
	{
		struct doca_comch_producer_task_send *task;

		/* 33 bytes of immediate data: over the MsgQ limit. */
		uint8_t big[33] = {0};
		EXPECT(doca_comch_producer_task_send_alloc_init(producer, NULL, big, sizeof(big), consumer_id,
								&task),
		       DOCA_ERROR_INVALID_VALUE);
	}
	for (int i = 0; i < 10; i++)
		doca_pe_progress(pe); /* no credits: the sends wait */
	size_t inflight = 0;
	EXPECT(doca_ctx_get_num_inflight_tasks(pctx, &inflight), DOCA_SUCCESS);
	TRUE(inflight == 2);
	EXPECT(doca_comch_msgq_stop(to_dpa), DOCA_ERROR_IN_USE);
	stop_with_outstanding_tasks(pe, pctx, &producer_seen, 2);

	/* Teardown; destroyed handles are refused afterwards. */
	EXPECT(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
	EXPECT(doca_comch_producer_destroy(producer), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
	EXPECT(doca_ctx_stop(doca_comch_consumer_as_ctx(dpa_consumer)), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_destroy(dpa_consumer), DOCA_SUCCESS);
	EXPECT(doca_comch_consumer_completion_destroy(comp), DOCA_SUCCESS);
	EXPECT(doca_dpa_thread_destroy(thread), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_stop(to_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_destroy(to_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_stop(from_dpa), DOCA_SUCCESS);
	EXPECT(doca_comch_msgq_destroy(from_dpa), DOCA_SUCCESS);
	EXPECT(doca_pe_destroy(pe), DOCA_SUCCESS);
	EXPECT(doca_pe_destroy(pe), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_dpa_destroy(dpa), DOCA_SUCCESS);
	EXPECT(doca_dev_close(dev), DOCA_SUCCESS);
	EXPECT(doca_dev_close(NULL), DOCA_ERROR_INVALID_VALUE);

	if (failures > 0) {
		fprintf(stderr, "ctx_state: %d check(s) failed\n", failures);
		return EXIT_FAILURE;
	}
	printf("ctx_state: every check passed\n");
	return EXIT_SUCCESS;
}
