/*
 * The counter program's host side, a DOCA program with a DPA kernel of its own (device.c, built
 * by dpacc into the app `counter_app`): a CPU producer sends the numbers 1..N to the DPA, the
 * kernel keeps a running total in DPA memory and answers each with the total so far, a CPU
 * consumer checks every answer, and an RPC reads the total at the end.
 *
 *   dpacc device.c -o libcounter_app.a -mcpu=nv-dpa-bf3 -hostcc=cc --app-name=counter_app
 *   cc host.c $(pkg-config --cflags --libs doca-comch doca-dpa doca-common) -L. -lcounter_app
 *   ./a.out [-p PCI_ADDR] [-n NUMBERS]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_comch_consumer.h>
#include <doca_comch_msgq.h>
#include <doca_comch_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dpa.h>
#include <doca_error.h>
#include <doca_pe.h>
#include <doca_version.h>

#include "counter.h"

/* What dpacc made from device.c. */
extern struct doca_dpa_app *counter_app;
extern doca_dpa_func_t counter_kernel;
extern doca_dpa_func_t counter_credits;
extern doca_dpa_func_t counter_read;

#define DEPTH 16u
#define TIMEOUT_SEC 10

#define CHECK(call)                                                                                \
	do {                                                                                       \
		doca_error_t check_result_ = (call);                                               \
		if (check_result_ != DOCA_SUCCESS) {                                               \
			fprintf(stderr, "counter: %s failed: %s\n", #call,                         \
				doca_error_get_descr(check_result_));                              \
			exit(EXIT_FAILURE);                                                        \
		}                                                                                  \
	} while (0)

struct counter_state {
	uint64_t answers;
	uint64_t expected_total;
	uint64_t wrong;
	uint64_t send_errors;
	bool stopping;
};

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void send_done(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_producer_task_send_as_task(task));
}

static void send_failed(struct doca_comch_producer_task_send *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	struct counter_state *state = ctx_user_data.ptr;

	(void)task_user_data;
	if (!state->stopping)
		state->send_errors++;
	doca_task_free(doca_comch_producer_task_send_as_task(task));
}

static void answer_received(struct doca_comch_consumer_task_post_recv *task,
			    union doca_data task_user_data, union doca_data ctx_user_data)
{
	struct counter_state *state = ctx_user_data.ptr;
	const uint8_t *imm = doca_comch_consumer_task_post_recv_get_imm_data(task);
	uint32_t len = doca_comch_consumer_task_post_recv_get_imm_data_len(task);
	uint64_t total = 0;

	(void)task_user_data;
	if (len == sizeof(total))
		memcpy(&total, imm, sizeof(total));
	if (len != sizeof(total) || total != state->expected_total)
		state->wrong++;
	state->answers++;
	/* The receive goes straight back for the next answer. */
	if (!state->stopping &&
	    doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)) == DOCA_SUCCESS)
		return;
	doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
}

static void answer_failed(struct doca_comch_consumer_task_post_recv *task,
			  union doca_data task_user_data, union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
}

static struct doca_dev *open_device(const char *pci_addr)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	uint32_t n;

	CHECK(doca_devinfo_create_list(&list, &n));
	for (uint32_t i = 0; i < n && dev == NULL; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		if (doca_dpa_cap_is_supported(list[i]) != DOCA_SUCCESS)
			continue;
		CHECK(doca_dev_open(list[i], &dev));
	}
	CHECK(doca_devinfo_destroy_list(list));
	if (dev == NULL) {
		fprintf(stderr, "counter: no device with a DPA at %s\n", pci_addr);
		exit(EXIT_FAILURE);
	}
	return dev;
}

static void stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states st;
	double deadline = now_sec() + TIMEOUT_SEC;
	doca_error_t result = doca_ctx_stop(ctx);

	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS)
		CHECK(result);
	do {
		doca_pe_progress(pe);
		CHECK(doca_ctx_get_state(ctx, &st));
		if (now_sec() > deadline) {
			fprintf(stderr, "counter: a context did not stop\n");
			exit(EXIT_FAILURE);
		}
	} while (st != DOCA_CTX_STATE_IDLE);
}

int main(int argc, char **argv)
{
	const char *pci_addr = "b1:00.0";
	uint64_t numbers = 10000;
	struct counter_state state = {0};
	union doca_data user_data = {.ptr = &state};
	int opt;

	while ((opt = getopt(argc, argv, "p:n:h")) != -1) {
		switch (opt) {
		case 'p':
			pci_addr = optarg;
			break;
		case 'n':
			numbers = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-p PCI_ADDR] [-n NUMBERS]\n", argv[0]);
			return opt == 'h' ? EXIT_SUCCESS : EXIT_FAILURE;
		}
	}
	printf("counter: built against DOCA %s, running on %s\n", DOCA_VERSION_STRING,
	       doca_version_runtime());

	struct doca_dev *dev = open_device(pci_addr);
	struct doca_dpa *dpa;
	struct doca_pe *pe;

	CHECK(doca_dpa_create(dev, &dpa));
	CHECK(doca_dpa_set_app(dpa, counter_app));
	CHECK(doca_dpa_start(dpa));
	CHECK(doca_pe_create(&pe));

	/* DPA memory: the kernel's argument block and the total it keeps. */
	doca_dpa_dev_uintptr_t args_ptr, total_ptr;
	uint64_t zero = 0;

	CHECK(doca_dpa_mem_alloc(dpa, sizeof(struct counter_args), &args_ptr));
	CHECK(doca_dpa_mem_alloc(dpa, sizeof(uint64_t), &total_ptr));
	CHECK(doca_dpa_h2d_memcpy(dpa, total_ptr, &zero, sizeof(zero)));

	struct doca_dpa_thread *thread;

	CHECK(doca_dpa_thread_create(dpa, &thread));
	CHECK(doca_dpa_thread_set_func_arg(thread, &counter_kernel, args_ptr));
	CHECK(doca_dpa_thread_start(thread));

	struct doca_comch_consumer_completion *consumer_comp;
	doca_dpa_dev_comch_consumer_completion_t consumer_comp_handle;

	CHECK(doca_comch_consumer_completion_create(&consumer_comp));
	CHECK(doca_comch_consumer_completion_set_max_num_recv(consumer_comp, DEPTH));
	CHECK(doca_comch_consumer_completion_set_imm_data_len(consumer_comp, sizeof(uint64_t)));
	CHECK(doca_comch_consumer_completion_set_dpa_thread(consumer_comp, thread));
	CHECK(doca_comch_consumer_completion_start(consumer_comp));
	CHECK(doca_comch_consumer_completion_get_dpa_handle(consumer_comp, &consumer_comp_handle));

	struct doca_dpa_completion *producer_comp;
	doca_dpa_dev_completion_t producer_comp_handle;

	CHECK(doca_dpa_completion_create(dpa, 2 * DEPTH, &producer_comp));
	CHECK(doca_dpa_completion_start(producer_comp));
	CHECK(doca_dpa_completion_get_dpa_handle(producer_comp, &producer_comp_handle));

	struct doca_comch_msgq *to_dpa;
	struct doca_comch_consumer *dpa_consumer;
	doca_dpa_dev_comch_consumer_t dpa_consumer_handle;
	uint32_t dpa_consumer_id;

	CHECK(doca_comch_msgq_create(dev, &to_dpa));
	CHECK(doca_comch_msgq_set_dpa_consumer(to_dpa, dpa));
	CHECK(doca_comch_msgq_start(to_dpa));
	CHECK(doca_comch_msgq_consumer_create(to_dpa, &dpa_consumer));
	CHECK(doca_ctx_set_datapath_on_dpa(doca_comch_consumer_as_ctx(dpa_consumer), dpa));
	CHECK(doca_comch_consumer_set_completion(dpa_consumer, consumer_comp, 0));
	CHECK(doca_comch_consumer_set_dev_max_num_recv(dpa_consumer, DEPTH));
	CHECK(doca_ctx_start(doca_comch_consumer_as_ctx(dpa_consumer)));
	CHECK(doca_comch_consumer_get_dpa_handle(dpa_consumer, &dpa_consumer_handle));
	CHECK(doca_comch_consumer_get_id(dpa_consumer, &dpa_consumer_id));

	struct doca_comch_msgq *from_dpa;
	struct doca_comch_producer *dpa_producer;
	doca_dpa_dev_comch_producer_t dpa_producer_handle;

	CHECK(doca_comch_msgq_create(dev, &from_dpa));
	CHECK(doca_comch_msgq_set_dpa_producer(from_dpa, dpa));
	CHECK(doca_comch_msgq_start(from_dpa));
	CHECK(doca_comch_msgq_producer_create(from_dpa, &dpa_producer));
	CHECK(doca_ctx_set_datapath_on_dpa(doca_comch_producer_as_ctx(dpa_producer), dpa));
	CHECK(doca_comch_producer_set_dev_max_num_send(dpa_producer, DEPTH));
	CHECK(doca_comch_producer_dpa_completion_attach(dpa_producer, producer_comp));
	CHECK(doca_ctx_start(doca_comch_producer_as_ctx(dpa_producer)));
	CHECK(doca_comch_producer_get_dpa_handle(dpa_producer, &dpa_producer_handle));

	struct doca_comch_consumer *cpu_consumer;
	struct doca_comch_producer *cpu_producer;
	uint32_t cpu_consumer_id;

	CHECK(doca_comch_msgq_consumer_create(from_dpa, &cpu_consumer));
	CHECK(doca_comch_consumer_task_post_recv_set_conf(cpu_consumer, answer_received, answer_failed,
							  DEPTH));
	CHECK(doca_ctx_set_user_data(doca_comch_consumer_as_ctx(cpu_consumer), user_data));
	CHECK(doca_pe_connect_ctx(pe, doca_comch_consumer_as_ctx(cpu_consumer)));
	CHECK(doca_ctx_start(doca_comch_consumer_as_ctx(cpu_consumer)));
	CHECK(doca_comch_consumer_get_id(cpu_consumer, &cpu_consumer_id));

	CHECK(doca_comch_msgq_producer_create(to_dpa, &cpu_producer));
	CHECK(doca_comch_producer_task_send_set_conf(cpu_producer, send_done, send_failed, DEPTH));
	CHECK(doca_ctx_set_user_data(doca_comch_producer_as_ctx(cpu_producer), user_data));
	CHECK(doca_pe_connect_ctx(pe, doca_comch_producer_as_ctx(cpu_producer)));
	CHECK(doca_ctx_start(doca_comch_producer_as_ctx(cpu_producer)));

	struct counter_args args = {
		.consumer_comp = consumer_comp_handle,
		.consumer = dpa_consumer_handle,
		.producer = dpa_producer_handle,
		.producer_comp = producer_comp_handle,
		.total = total_ptr,
		.cpu_consumer_id = cpu_consumer_id,
	};
	uint64_t rpc_result;

	CHECK(doca_dpa_h2d_memcpy(dpa, args_ptr, &args, sizeof(args)));
	CHECK(doca_dpa_thread_run(thread));
	CHECK(doca_dpa_rpc(dpa, &counter_credits, &rpc_result, (uint64_t)dpa_consumer_handle,
			   (uint64_t)DEPTH));
	for (uint32_t i = 0; i < DEPTH; i++) {
		struct doca_comch_consumer_task_post_recv *task;

		CHECK(doca_comch_consumer_task_post_recv_alloc_init(cpu_consumer, NULL, &task));
		CHECK(doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)));
	}

	for (uint64_t i = 1; i <= numbers; i++) {
		struct doca_comch_producer_task_send *task;
		uint8_t value[sizeof(uint64_t)];

		memcpy(value, &i, sizeof(i));
		state.expected_total += i;
		CHECK(doca_comch_producer_task_send_alloc_init(cpu_producer, NULL, value, sizeof(value),
							       dpa_consumer_id, &task));
		CHECK(doca_task_submit(doca_comch_producer_task_send_as_task(task)));
		double deadline = now_sec() + TIMEOUT_SEC;

		while (state.answers < i) {
			if (!doca_pe_progress(pe) && now_sec() > deadline) {
				fprintf(stderr, "counter: no answer to %lu within %d s\n",
					(unsigned long)i, TIMEOUT_SEC);
				return EXIT_FAILURE;
			}
		}
	}
	uint64_t total = 0;

	CHECK(doca_dpa_rpc(dpa, &counter_read, &total, (uint64_t)total_ptr));

	state.stopping = true;
	stop_ctx(pe, doca_comch_producer_as_ctx(cpu_producer));
	stop_ctx(pe, doca_comch_consumer_as_ctx(cpu_consumer));
	CHECK(doca_comch_producer_destroy(cpu_producer));
	CHECK(doca_comch_consumer_destroy(cpu_consumer));
	CHECK(doca_ctx_stop(doca_comch_producer_as_ctx(dpa_producer)));
	CHECK(doca_comch_producer_destroy(dpa_producer));
	CHECK(doca_ctx_stop(doca_comch_consumer_as_ctx(dpa_consumer)));
	CHECK(doca_comch_consumer_destroy(dpa_consumer));
	CHECK(doca_comch_msgq_stop(from_dpa));
	CHECK(doca_comch_msgq_destroy(from_dpa));
	CHECK(doca_comch_msgq_stop(to_dpa));
	CHECK(doca_comch_msgq_destroy(to_dpa));
	CHECK(doca_dpa_completion_stop(producer_comp));
	CHECK(doca_dpa_completion_destroy(producer_comp));
	CHECK(doca_comch_consumer_completion_stop(consumer_comp));
	CHECK(doca_comch_consumer_completion_destroy(consumer_comp));
	CHECK(doca_dpa_thread_stop(thread));
	CHECK(doca_dpa_thread_destroy(thread));
	CHECK(doca_dpa_mem_free(dpa, total_ptr));
	CHECK(doca_dpa_mem_free(dpa, args_ptr));
	CHECK(doca_pe_destroy(pe));
	CHECK(doca_dpa_stop(dpa));
	CHECK(doca_dpa_destroy(dpa));
	CHECK(doca_dev_close(dev));

	uint64_t expected = numbers * (numbers + 1) / 2;

	printf("counter: %lu answers, %lu wrong, %lu send errors, total %lu (expected %lu)\n",
	       (unsigned long)state.answers, (unsigned long)state.wrong,
	       (unsigned long)state.send_errors, (unsigned long)total, (unsigned long)expected);
	return state.answers == numbers && state.wrong == 0 && state.send_errors == 0 &&
			       total == expected ?
		       EXIT_SUCCESS :
		       EXIT_FAILURE;
}
