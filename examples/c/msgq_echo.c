/*
 * MsgQ echo in C against DOCA's API: a CPU producer sends 32-byte immediates to a DPA consumer,
 * the kit's `echo` kernel (running as a DPA thread) answers each through a DPA producer, and a
 * CPU consumer receives the answers. Every echo is checked byte for byte.
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA with the kit's dpacc-built app it runs on a BlueField.
 *
 *   cargo xtask soft-sdk && cargo xtask build-dpa --release
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/msgq_echo.c -I shared-abi/include \
 *      $(pkg-config --cflags --libs doca-comch doca-dpa doca-common) \
 *      -L target/dpa/release/soft -ldpakit_kernels -Wl,-rpath,target/dpa/release/soft \
 *      -o msgq_echo
 *   ./msgq_echo [-p PCI_ADDR] [-n MESSAGES]
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

#include <dpakit_abi.h>

/* The kit's DPA app and the kernels this program uses, defined by the app library. */
extern struct doca_dpa_app *dpakit_kernels;
extern doca_dpa_func_t echo;
extern doca_dpa_func_t dpakit_consumer_ack;

#define DEPTH 64u
#define TIMEOUT_SEC 10

#define CHECK(call)                                                                                \
	do {                                                                                       \
		doca_error_t check_result_ = (call);                                               \
		if (check_result_ != DOCA_SUCCESS) {                                               \
			fprintf(stderr, "msgq_echo: %s failed: %s (%s)\n", #call,                  \
				doca_error_get_name(check_result_),                                \
				doca_error_get_descr(check_result_));                              \
			exit(EXIT_FAILURE);                                                        \
		}                                                                                  \
	} while (0)

/* What the callbacks see through the contexts' user data. */
struct echo_state {
	uint64_t received;
	uint64_t mismatched;
	uint64_t send_errors;
	struct dpakit_imm_message expected;
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
	struct echo_state *state = ctx_user_data.ptr;
	struct doca_task *t = doca_comch_producer_task_send_as_task(task);

	(void)task_user_data;
	if (!state->stopping) {
		fprintf(stderr, "msgq_echo: a send failed: %s\n",
			doca_error_get_name(doca_task_get_status(t)));
		state->send_errors++;
	}
	doca_task_free(t);
}

static void recv_done(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
		      union doca_data ctx_user_data)
{
	struct echo_state *state = ctx_user_data.ptr;
	const uint8_t *imm = doca_comch_consumer_task_post_recv_get_imm_data(task);
	uint32_t len = doca_comch_consumer_task_post_recv_get_imm_data_len(task);

	(void)task_user_data;
	if (len != sizeof(state->expected) || memcmp(imm, &state->expected, len) != 0)
		state->mismatched++;
	state->received++;
	/* The receive task goes straight back for the next answer. */
	if (!state->stopping &&
	    doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)) == DOCA_SUCCESS)
		return;
	doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
}

static void recv_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	(void)task_user_data;
	(void)ctx_user_data;
	/* Flushed by the stop at the end. */
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
		fprintf(stderr, "msgq_echo: no device with a DPA at %s\n", pci_addr);
		exit(EXIT_FAILURE);
	}
	return dev;
}

/* Progresses until the context is idle (a stop that returned IN_PROGRESS). */
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
			fprintf(stderr, "msgq_echo: a context did not stop\n");
			exit(EXIT_FAILURE);
		}
	} while (st != DOCA_CTX_STATE_IDLE);
}

int main(int argc, char **argv)
{
	const char *pci_addr = "b1:00.0";
	uint64_t messages = 100000;
	struct echo_state state = {0};
	union doca_data user_data = {.ptr = &state};
	int opt;

	while ((opt = getopt(argc, argv, "p:n:h")) != -1) {
		switch (opt) {
		case 'p':
			pci_addr = optarg;
			break;
		case 'n':
			messages = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-p PCI_ADDR] [-n MESSAGES]\n", argv[0]);
			return opt == 'h' ? EXIT_SUCCESS : EXIT_FAILURE;
		}
	}

	struct doca_dev *dev = open_device(pci_addr);
	struct doca_dpa *dpa;
	struct doca_pe *pe;

	CHECK(doca_dpa_create(dev, &dpa));
	CHECK(doca_dpa_set_app(dpa, dpakit_kernels));
	CHECK(doca_dpa_start(dpa));
	CHECK(doca_pe_create(&pe));

	/* The DPA thread running `echo` on its argument block. */
	doca_dpa_dev_uintptr_t args_ptr;
	struct doca_dpa_thread *thread;

	CHECK(doca_dpa_mem_alloc(dpa, sizeof(struct dpakit_msgq_path_args), &args_ptr));
	CHECK(doca_dpa_thread_create(dpa, &thread));
	CHECK(doca_dpa_thread_set_func_arg(thread, &echo, args_ptr));
	CHECK(doca_dpa_thread_start(thread));

	/* Where the DPA consumer's messages appear (they trigger the thread). */
	struct doca_comch_consumer_completion *consumer_comp;
	doca_dpa_dev_comch_consumer_completion_t consumer_comp_handle;

	CHECK(doca_comch_consumer_completion_create(&consumer_comp));
	CHECK(doca_comch_consumer_completion_set_max_num_recv(consumer_comp, DEPTH));
	CHECK(doca_comch_consumer_completion_set_imm_data_len(consumer_comp, DPAKIT_MAX_IMM_DATA_LEN));
	CHECK(doca_comch_consumer_completion_set_dpa_thread(consumer_comp, thread));
	CHECK(doca_comch_consumer_completion_start(consumer_comp));
	CHECK(doca_comch_consumer_completion_get_dpa_handle(consumer_comp, &consumer_comp_handle));

	/* Where the DPA producer reports its sends. */
	struct doca_dpa_completion *producer_comp;
	doca_dpa_dev_completion_t producer_comp_handle;

	CHECK(doca_dpa_completion_create(dpa, 2 * DEPTH, &producer_comp));
	CHECK(doca_dpa_completion_start(producer_comp));
	CHECK(doca_dpa_completion_get_dpa_handle(producer_comp, &producer_comp_handle));

	/* CPU -> DPA: a MsgQ whose consumer runs on the DPA. */
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

	/* DPA -> CPU: a MsgQ whose producer runs on the DPA. */
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

	/* The CPU ends: a consumer of the answers and a producer of the requests, on the PE. */
	struct doca_comch_consumer *cpu_consumer;
	struct doca_comch_producer *cpu_producer;
	uint32_t cpu_consumer_id;

	CHECK(doca_comch_msgq_consumer_create(from_dpa, &cpu_consumer));
	CHECK(doca_comch_consumer_task_post_recv_set_conf(cpu_consumer, recv_done, recv_failed, DEPTH));
	CHECK(doca_ctx_set_user_data(doca_comch_consumer_as_ctx(cpu_consumer), user_data));
	CHECK(doca_pe_connect_ctx(pe, doca_comch_consumer_as_ctx(cpu_consumer)));
	CHECK(doca_ctx_start(doca_comch_consumer_as_ctx(cpu_consumer)));
	CHECK(doca_comch_consumer_get_id(cpu_consumer, &cpu_consumer_id));

	CHECK(doca_comch_msgq_producer_create(to_dpa, &cpu_producer));
	CHECK(doca_comch_producer_task_send_set_conf(cpu_producer, send_done, send_failed, DEPTH));
	CHECK(doca_ctx_set_user_data(doca_comch_producer_as_ctx(cpu_producer), user_data));
	CHECK(doca_pe_connect_ctx(pe, doca_comch_producer_as_ctx(cpu_producer)));
	CHECK(doca_ctx_start(doca_comch_producer_as_ctx(cpu_producer)));

	/* The kernel's argument block, then the thread runs and gets its first credits. */
	struct dpakit_msgq_path_args args = {
		.consumer_completion = consumer_comp_handle,
		.consumer = dpa_consumer_handle,
		.producer = dpa_producer_handle,
		.producer_completion = producer_comp_handle,
		.cpu_consumer_id = cpu_consumer_id,
		.submit_flags = DPAKIT_SUBMIT_FLAG_FLUSH,
	};
	uint64_t rpc_result;

	CHECK(doca_dpa_h2d_memcpy(dpa, args_ptr, &args, sizeof(args)));
	CHECK(doca_dpa_thread_run(thread));
	CHECK(doca_dpa_rpc(dpa, &dpakit_consumer_ack, &rpc_result, (uint64_t)dpa_consumer_handle,
			   (uint64_t)DEPTH));

	for (uint32_t i = 0; i < DEPTH; i++) {
		struct doca_comch_consumer_task_post_recv *task;

		CHECK(doca_comch_consumer_task_post_recv_alloc_init(cpu_consumer, NULL, &task));
		CHECK(doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)));
	}

	/* One message at a time: send, progress until its echo is back, check it. */
	double start = now_sec();

	for (uint64_t i = 0; i < messages; i++) {
		struct doca_comch_producer_task_send *task;
		struct dpakit_echo body = {.token = i, .timestamp_ns = 0, .tag = i * 2654435761u};

		memset(&state.expected, 0, sizeof(state.expected));
		state.expected.header.opcode = DPAKIT_OP_ECHO;
		state.expected.header.seq = (uint32_t)i;
		memcpy(state.expected.payload, &body, sizeof(body));
		CHECK(doca_comch_producer_task_send_alloc_init(cpu_producer, NULL,
							       (uint8_t *)&state.expected,
							       sizeof(state.expected), dpa_consumer_id,
							       &task));
		CHECK(doca_task_submit(doca_comch_producer_task_send_as_task(task)));
		double deadline = now_sec() + TIMEOUT_SEC;

		while (state.received <= i) {
			if (!doca_pe_progress(pe) && now_sec() > deadline) {
				fprintf(stderr, "msgq_echo: echo %lu did not come back within %d s\n",
					(unsigned long)i, TIMEOUT_SEC);
				return EXIT_FAILURE;
			}
		}
	}
	double elapsed = now_sec() - start;

	/* Teardown in DOCA's order: endpoints, queues, completions, thread, DPA, device. */
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
	CHECK(doca_dpa_mem_free(dpa, args_ptr));
	CHECK(doca_pe_destroy(pe));
	CHECK(doca_dpa_stop(dpa));
	CHECK(doca_dpa_destroy(dpa));
	CHECK(doca_dev_close(dev));

	printf("msgq_echo: %lu echoes, %lu mismatched, %lu send errors, %.0f msg/s\n",
	       (unsigned long)state.received, (unsigned long)state.mismatched,
	       (unsigned long)state.send_errors, (double)messages / elapsed);
	return state.received == messages && state.mismatched == 0 && state.send_errors == 0 ?
		       EXIT_SUCCESS :
		       EXIT_FAILURE;
}
