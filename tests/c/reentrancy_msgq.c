/*
 * The re-entrancy matrix of the MsgQ (see reentrancy.h): every callback of a MsgQ's CPU producer
 * and CPU consumer crossed with every call a callback may make. Each case builds the whole path
 * afresh — a DPA context running the kit's `echo` kernel, two MsgQs, the DPA's consumer and
 * producer, the CPU's producer and consumer on one progress engine — makes its callback run, and
 * tears the path down in DOCA's order. (The DPA's completion contexts have no callbacks on the
 * CPU: the kernel polls them.)
 *
 *   reentrancy_msgq [--case N[-M]]
 *
 * Built with the kit's app library (-ldpakit_kernels), as examples/c/msgq_echo.c is.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdbool.h>
#include <stdint.h>
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
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_version.h>

#include <dpakit_abi.h>

DOCA_LOG_REGISTER(REENTRANCY_MSGQ);

#include "reentrancy.h"

/* The kit's DPA app and the kernels the path uses, from the app library. */
extern struct doca_dpa_app *dpakit_kernels;
extern doca_dpa_func_t echo;
extern doca_dpa_func_t dpakit_consumer_ack;

#define DEPTH 8u
#define DPA_PCI "b1:00.0"

enum cb {
	CB_P_STATE,	/* the CPU producer becomes RUNNING (inside its doca_ctx_start) */
	CB_C_STATE,	/* the CPU consumer becomes RUNNING (inside its doca_ctx_start) */
	CB_P_SEND_DONE, /* a send reached the DPA consumer */
	CB_P_SEND_ERR,	/* a send waiting for a credit was flushed by a stop */
	CB_C_RECV_DONE, /* the kernel's answer arrived */
	CB_C_RECV_ERR,	/* a posted receive was flushed by a stop */
	CB_P_IDLE,	/* the CPU producer becomes IDLE (the program stopped it) */
	CB_C_IDLE,	/* the CPU consumer becomes IDLE (the program stopped it) */
	CB_COUNT
};

static const struct {
	const char *name;
	bool task;
} cb_infos[CB_COUNT] = {
	[CB_P_STATE] = {"producer RUNNING", false},   [CB_C_STATE] = {"consumer RUNNING", false},
	[CB_P_SEND_DONE] = {"send done", true},	      [CB_P_SEND_ERR] = {"send failed", true},
	[CB_C_RECV_DONE] = {"receive done", true},     [CB_C_RECV_ERR] = {"receive failed", true},
	[CB_P_IDLE] = {"producer IDLE", false},	      [CB_C_IDLE] = {"consumer IDLE", false},
};

/* One case's path. */
struct path {
	struct reent_case *c;
	bool in_call;
	struct doca_pe *pe;
	struct doca_dpa *dpa;
	struct doca_dpa_thread *thread;
	doca_dpa_dev_uintptr_t args;
	struct doca_comch_consumer_completion *consumer_comp;
	struct doca_dpa_completion *producer_comp;
	struct doca_comch_msgq *to_dpa, *from_dpa;
	struct doca_comch_consumer *dpa_consumer;
	struct doca_comch_producer *dpa_producer;
	struct reent_obj producer, consumer; /* the CPU's */
	uint32_t dpa_consumer_id, received;
};

static struct path the_path;

static doca_error_t destroy_producer(void *handle)
{
	return doca_comch_producer_destroy(handle);
}

static doca_error_t destroy_consumer(void *handle)
{
	return doca_comch_consumer_destroy(handle);
}

/* Runs the case's action if this is its callback; whether the task is no longer the caller's. */
static bool hook(struct path *p, enum cb cb, struct reent_obj *self, struct doca_task *task)
{
	struct reent_site s = {
		.self = self,
		.sibling = self == &p->producer ? &p->consumer : &p->producer,
		.parent = NULL,
		.pe = p->pe,
		.task = task,
		.in_progress = !p->in_call,
	};

	return reent_hook(p->c, cb, &s) && p->c->task_consumed;
}

static void send_finished(struct doca_comch_producer_task_send *send, union doca_data ctx_user_data, enum cb cb)
{
	struct path *p = ctx_user_data.ptr;
	struct doca_task *task = doca_comch_producer_task_send_as_task(send);

	if (!hook(p, cb, &p->producer, task))
		doca_task_free(task);
}

static void send_done(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	(void)task_user_data;
	send_finished(task, ctx_user_data, CB_P_SEND_DONE);
}

static void send_failed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	(void)task_user_data;
	send_finished(task, ctx_user_data, CB_P_SEND_ERR);
}

static void recv_finished(struct doca_comch_consumer_task_post_recv *recv, union doca_data ctx_user_data, enum cb cb)
{
	struct path *p = ctx_user_data.ptr;
	struct doca_task *task = doca_comch_consumer_task_post_recv_as_task(recv);

	if (cb == CB_C_RECV_DONE)
		p->received++;
	if (hook(p, cb, &p->consumer, task))
		return;
	/* Posted again while the consumer runs, as DOCA programs do; freed once it stops. */
	if (cb == CB_C_RECV_DONE && reent_state(&p->consumer) == DOCA_CTX_STATE_RUNNING &&
	    doca_task_submit(task) == DOCA_SUCCESS)
		return;
	doca_task_free(task);
}

static void recv_done(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	(void)task_user_data;
	recv_finished(task, ctx_user_data, CB_C_RECV_DONE);
}

static void recv_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	(void)task_user_data;
	recv_finished(task, ctx_user_data, CB_C_RECV_ERR);
}

static void endpoint_state(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev,
			   enum doca_ctx_states next)
{
	struct path *p = user_data.ptr;

	bool producer = ctx == p->producer.ctx;

	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING)
		hook(p, producer ? CB_P_STATE : CB_C_STATE, producer ? &p->producer : &p->consumer, NULL);
	else if (next == DOCA_CTX_STATE_IDLE)
		hook(p, producer ? CB_P_IDLE : CB_C_IDLE, producer ? &p->producer : &p->consumer, NULL);
}

/* ---- Building and tearing down the path ---- */

/* Records the first failed step of the case. */
#define STEP(p, call)                                                                              \
	do {                                                                                       \
		doca_error_t step_result_ = (call);                                                \
		if (step_result_ != DOCA_SUCCESS && !(p)->c->failed)                               \
			reent_fail((p)->c, #call, step_result_);                                   \
	} while (0)

/* The DPA half: context, thread, completion contexts, queues and the DPA's endpoints. */
static void build_dpa_side(struct path *p, struct doca_dev *dev)
{
	doca_dpa_dev_comch_consumer_completion_t comp_handle = 0;

	STEP(p, doca_dpa_create(dev, &p->dpa));
	STEP(p, doca_dpa_set_app(p->dpa, dpakit_kernels));
	STEP(p, doca_dpa_start(p->dpa));
	STEP(p, doca_dpa_mem_alloc(p->dpa, sizeof(struct dpakit_msgq_path_args), &p->args));
	STEP(p, doca_dpa_thread_create(p->dpa, &p->thread));
	STEP(p, doca_dpa_thread_set_func_arg(p->thread, &echo, p->args));
	STEP(p, doca_dpa_thread_start(p->thread));
	STEP(p, doca_comch_consumer_completion_create(&p->consumer_comp));
	STEP(p, doca_comch_consumer_completion_set_max_num_recv(p->consumer_comp, DEPTH));
	STEP(p, doca_comch_consumer_completion_set_imm_data_len(p->consumer_comp, DPAKIT_MAX_IMM_DATA_LEN));
	STEP(p, doca_comch_consumer_completion_set_dpa_thread(p->consumer_comp, p->thread));
	STEP(p, doca_comch_consumer_completion_start(p->consumer_comp));
	STEP(p, doca_comch_consumer_completion_get_dpa_handle(p->consumer_comp, &comp_handle));
	STEP(p, doca_dpa_completion_create(p->dpa, 2 * DEPTH, &p->producer_comp));
	STEP(p, doca_dpa_completion_start(p->producer_comp));
	STEP(p, doca_comch_msgq_create(dev, &p->to_dpa));
	STEP(p, doca_comch_msgq_set_dpa_consumer(p->to_dpa, p->dpa));
	STEP(p, doca_comch_msgq_start(p->to_dpa));
	STEP(p, doca_comch_msgq_consumer_create(p->to_dpa, &p->dpa_consumer));
	STEP(p, doca_ctx_set_datapath_on_dpa(doca_comch_consumer_as_ctx(p->dpa_consumer), p->dpa));
	STEP(p, doca_comch_consumer_set_completion(p->dpa_consumer, p->consumer_comp, 0));
	STEP(p, doca_comch_consumer_set_dev_max_num_recv(p->dpa_consumer, DEPTH));
	STEP(p, doca_ctx_start(doca_comch_consumer_as_ctx(p->dpa_consumer)));
	STEP(p, doca_comch_consumer_get_id(p->dpa_consumer, &p->dpa_consumer_id));
	STEP(p, doca_comch_msgq_create(dev, &p->from_dpa));
	STEP(p, doca_comch_msgq_set_dpa_producer(p->from_dpa, p->dpa));
	STEP(p, doca_comch_msgq_start(p->from_dpa));
	STEP(p, doca_comch_msgq_producer_create(p->from_dpa, &p->dpa_producer));
	STEP(p, doca_ctx_set_datapath_on_dpa(doca_comch_producer_as_ctx(p->dpa_producer), p->dpa));
	STEP(p, doca_comch_producer_set_dev_max_num_send(p->dpa_producer, DEPTH));
	STEP(p, doca_comch_producer_dpa_completion_attach(p->dpa_producer, p->producer_comp));
	STEP(p, doca_ctx_start(doca_comch_producer_as_ctx(p->dpa_producer)));
}

/* The CPU half on the PE, then the kernel runs; with `credits`, the DPA consumer gets them. */
static void build_cpu_side(struct path *p, bool credits)
{
	union doca_data me = {.ptr = p};
	struct doca_comch_consumer *consumer = NULL;
	struct doca_comch_producer *producer = NULL;
	struct dpakit_msgq_path_args args = {0};
	uint32_t cpu_consumer_id = 0;
	uint64_t rpc_result = 0;

	STEP(p, doca_comch_msgq_consumer_create(p->from_dpa, &consumer));
	p->consumer = (struct reent_obj){.name = "CPU consumer", .handle = consumer,
					 .ctx = doca_comch_consumer_as_ctx(consumer), .destroy = destroy_consumer};
	STEP(p, doca_comch_consumer_task_post_recv_set_conf(consumer, recv_done, recv_failed, DEPTH));
	STEP(p, doca_ctx_set_user_data(p->consumer.ctx, me));
	STEP(p, doca_ctx_set_state_changed_cb(p->consumer.ctx, endpoint_state));
	STEP(p, doca_pe_connect_ctx(p->pe, p->consumer.ctx));
	STEP(p, doca_comch_consumer_get_id(consumer, &cpu_consumer_id));
	STEP(p, doca_comch_msgq_producer_create(p->to_dpa, &producer));
	p->producer = (struct reent_obj){.name = "CPU producer", .handle = producer,
					 .ctx = doca_comch_producer_as_ctx(producer), .destroy = destroy_producer};
	STEP(p, doca_comch_producer_task_send_set_conf(producer, send_done, send_failed, DEPTH));
	STEP(p, doca_ctx_set_user_data(p->producer.ctx, me));
	STEP(p, doca_ctx_set_state_changed_cb(p->producer.ctx, endpoint_state));
	STEP(p, doca_pe_connect_ctx(p->pe, p->producer.ctx));
	/* Both start at once (RUNNING comes inside doca_ctx_start); a callback may stop either. */
	p->in_call = true;
	STEP(p, doca_ctx_start(p->consumer.ctx));
	if (p->producer.handle != NULL)
		STEP(p, doca_ctx_start(p->producer.ctx));
	p->in_call = false;

	STEP(p, doca_comch_consumer_completion_get_dpa_handle(p->consumer_comp, &args.consumer_completion));
	STEP(p, doca_comch_consumer_get_dpa_handle(p->dpa_consumer, &args.consumer));
	STEP(p, doca_comch_producer_get_dpa_handle(p->dpa_producer, &args.producer));
	STEP(p, doca_dpa_completion_get_dpa_handle(p->producer_comp, &args.producer_completion));
	args.cpu_consumer_id = cpu_consumer_id;
	args.submit_flags = DPAKIT_SUBMIT_FLAG_FLUSH;
	STEP(p, doca_dpa_h2d_memcpy(p->dpa, p->args, &args, sizeof(args)));
	STEP(p, doca_dpa_thread_run(p->thread));
	if (credits)
		STEP(p, doca_dpa_rpc(p->dpa, &dpakit_consumer_ack, &rpc_result, (uint64_t)args.consumer,
				     (uint64_t)DEPTH));
}

static void post_receives(struct path *p)
{
	for (uint32_t i = 0; i < DEPTH / 2 && reent_state(&p->consumer) == DOCA_CTX_STATE_RUNNING; i++) {
		struct doca_comch_consumer_task_post_recv *task;

		STEP(p, doca_comch_consumer_task_post_recv_alloc_init(p->consumer.handle, NULL, &task));
		STEP(p, doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)));
	}
}

static void send_message(struct path *p, uint32_t seq)
{
	struct dpakit_imm_message msg = {0};
	struct doca_comch_producer_task_send *task;

	if (reent_state(&p->producer) != DOCA_CTX_STATE_RUNNING)
		return;
	msg.header.opcode = DPAKIT_OP_ECHO;
	msg.header.seq = seq;
	/* The message is copied at submission. */
	STEP(p, doca_comch_producer_task_send_alloc_init(p->producer.handle, NULL, (uint8_t *)&msg, sizeof(msg),
							 p->dpa_consumer_id, &task));
	STEP(p, doca_task_submit(doca_comch_producer_task_send_as_task(task)));
}

/* Stops `o` as the program (not a callback): its state callbacks may run inside the call. */
static void stop_from_program(struct path *p, struct reent_obj *o)
{
	if (reent_state(o) != DOCA_CTX_STATE_RUNNING)
		return;
	p->in_call = true;
	doca_ctx_stop(o->ctx);
	p->in_call = false;
}

static void stop_dpa_endpoint(struct path *p, struct doca_ctx *ctx)
{
	STEP(p, doca_ctx_stop(ctx));
}

static void tear_down(struct path *p)
{
	reent_teardown(p->c, p->pe, &p->producer);
	reent_teardown(p->c, p->pe, &p->consumer);
	stop_dpa_endpoint(p, doca_comch_producer_as_ctx(p->dpa_producer));
	STEP(p, doca_comch_producer_destroy(p->dpa_producer));
	stop_dpa_endpoint(p, doca_comch_consumer_as_ctx(p->dpa_consumer));
	STEP(p, doca_comch_consumer_destroy(p->dpa_consumer));
	STEP(p, doca_comch_msgq_stop(p->from_dpa));
	STEP(p, doca_comch_msgq_destroy(p->from_dpa));
	STEP(p, doca_comch_msgq_stop(p->to_dpa));
	STEP(p, doca_comch_msgq_destroy(p->to_dpa));
	STEP(p, doca_dpa_completion_stop(p->producer_comp));
	STEP(p, doca_dpa_completion_destroy(p->producer_comp));
	STEP(p, doca_comch_consumer_completion_stop(p->consumer_comp));
	STEP(p, doca_comch_consumer_completion_destroy(p->consumer_comp));
	STEP(p, doca_dpa_thread_stop(p->thread));
	STEP(p, doca_dpa_thread_destroy(p->thread));
	STEP(p, doca_dpa_mem_free(p->dpa, p->args));
	STEP(p, doca_dpa_stop(p->dpa));
	STEP(p, doca_dpa_destroy(p->dpa));
	STEP(p, doca_pe_destroy(p->pe));
}

static bool fired(void *arg)
{
	const struct path *p = arg;

	return p->c->fired;
}

static bool run_case(struct path *p, struct reent_case *c, struct doca_dev *dev)
{
	enum cb cb = c->cb;

	memset(p, 0, sizeof(*p));
	p->c = c;
	STEP(p, doca_pe_create(&p->pe));
	if (c->failed)
		return reent_report(c, c->index);
	build_dpa_side(p, dev);
	/* A send flushed by a stop is one that waits for a credit: none are given then. */
	if (!c->failed)
		build_cpu_side(p, cb != CB_P_SEND_ERR);
	if (!c->failed) {
		post_receives(p);
		switch (cb) {
		case CB_P_SEND_DONE:
		case CB_C_RECV_DONE:
			send_message(p, 1);
			break;
		case CB_P_SEND_ERR:
			send_message(p, 1);
			send_message(p, 2);
			reent_settle(p->pe, 10);
			stop_from_program(p, &p->producer);
			break;
		case CB_C_RECV_ERR:
		case CB_C_IDLE:
			stop_from_program(p, &p->consumer);
			break;
		case CB_P_IDLE:
			stop_from_program(p, &p->producer);
			break;
		default:
			break;
		}
		if (!reent_progress_until(p->pe, fired, p))
			reent_fail(c, "waiting for the callback", DOCA_ERROR_TIME_OUT);
		reent_settle(p->pe, 100);
	}
	if (p->dpa != NULL)
		tear_down(p);
	return reent_report(c, c->index);
}

static struct doca_dev *open_dpa_device(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	uint32_t n = 0;

	if (doca_devinfo_create_list(&list, &n) != DOCA_SUCCESS)
		return NULL;
	for (uint32_t i = 0; i < n && dev == NULL; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], DPA_PCI, &equal) == DOCA_SUCCESS && equal &&
		    doca_dpa_cap_is_supported(list[i]) == DOCA_SUCCESS)
			doca_dev_open(list[i], &dev);
	}
	doca_devinfo_destroy_list(list);
	return dev;
}

int main(int argc, char **argv)
{
	int first = 0, last = 0, index = 0, passed = 0, failed = 0;
	struct doca_dev *dev;

	if (argc == 3 && strcmp(argv[1], "--case") == 0) {
		if (sscanf(argv[2], "%d-%d", &first, &last) != 2)
			first = last = atoi(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--case N[-M]]\n", argv[0]);
		return EXIT_FAILURE;
	}
	if (doca_log_backend_create_standard() != DOCA_SUCCESS)
		return EXIT_FAILURE;
	dev = open_dpa_device();
	if (dev == NULL) {
		fprintf(stderr, "reentrancy_msgq: no device with a DPA at %s\n", DPA_PCI);
		return EXIT_FAILURE;
	}
	for (int cb = 0; cb < CB_COUNT; cb++) {
		for (int a = 0; a < ACT_COUNT; a++) {
			struct reent_case c = {.cb = cb, .action = (enum reent_action)a, .cb_name = cb_infos[cb].name};

			if (!reent_applies(c.action, cb_infos[cb].task, false, false))
				continue;
			c.index = ++index;
			if (first > 0 && (index < first || index > last))
				continue;
			if (run_case(&the_path, &c, dev))
				passed++;
			else
				failed++;
		}
	}
	if (doca_dev_close(dev) != DOCA_SUCCESS) {
		fprintf(stderr, "reentrancy_msgq: doca_dev_close failed\n");
		failed++;
	}
	printf("reentrancy_msgq: %d cases passed, %d failed\n", passed, failed);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
