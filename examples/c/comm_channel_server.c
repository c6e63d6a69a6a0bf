/*
 * Legacy Comm Channel, service side: the partner of comm_channel_client.c, written like DOCA
 * 2.8's Comm Channel samples. It listens under a name on the BlueField Arm device and the
 * representor of the client's host function and answers every message on the connection it came
 * from: with the message itself, or with TEXT when -t is given. It waits on the endpoint's event
 * channels with epoll, and exits once it has answered COUNT messages and the client has
 * disconnected (or on SIGINT/SIGTERM).
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA up to 2.8 it runs on a BlueField's Arm cores.
 *
 *   cargo xtask soft-sdk
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comm_channel_server.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comm_channel_server
 *   ./comm_channel_server [-p PCI_ADDR] [-r REP_PCI_ADDR] [-s NAME] [-t TEXT] [-c COUNT]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <doca_comm_channel.h>
#include <doca_log.h>

DOCA_LOG_REGISTER(COMM_CHANNEL_SERVER);

#include "comch_common.h"

#define CC_MAX_MSG_SIZE 4080
#define CC_QUEUE_SIZE 64
#define CC_IDLE_TIMEOUT_SEC 10

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static doca_error_t register_flags(void)
{
	doca_error_t result;

	result = register_flag("p", "pci-addr", "<PCI_ADDR>",
			       "Arm-side device to listen on (default 03:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("r", "rep-pci", "<PCI_ADDR>",
				       "representor of the client's host function (default b1:00.0)",
				       DOCA_ARGP_TYPE_STRING, rep_pci_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "service-name", "<NAME>",
				       "name the client connects to (default dpakit_cc)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("t", "text", "<TEXT>",
				       "answer every message with this text (default: echo it)",
				       DOCA_ARGP_TYPE_STRING, text_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>",
				       "exit after answering this many messages, once the client has "
				       "disconnected (default 1)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	return result;
}

/* Waits up to timeout_ms for the event channel fd, armed by arm(ep). */
static void wait_channel(struct doca_comm_channel_ep_t *ep, int epoll_fd,
			 doca_error_t (*arm)(struct doca_comm_channel_ep_t *), int timeout_ms)
{
	struct epoll_event event;

	if (arm(ep) != DOCA_SUCCESS)
		return;
	(void)epoll_wait(epoll_fd, &event, 1, timeout_ms);
}

/* Sends msg to peer, waiting on the send channel while the send queue is full. */
static doca_error_t send_answer(struct doca_comm_channel_ep_t *ep, int send_epoll, const void *msg,
				size_t len, struct doca_comm_channel_addr_t *peer)
{
	doca_error_t result;

	while ((result = doca_comm_channel_ep_sendto(ep, msg, len, DOCA_CC_MSG_FLAG_NONE, peer)) ==
	       DOCA_ERROR_AGAIN) {
		if (stop)
			return DOCA_ERROR_AGAIN;
		wait_channel(ep, send_epoll, doca_comm_channel_ep_event_handle_arm_send, 100);
	}
	return result;
}

static int epoll_on(doca_event_channel_t fd)
{
	struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
	int epoll_fd = epoll_create1(EPOLL_CLOEXEC);

	if (epoll_fd < 0)
		return -1;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
		close(epoll_fd);
		return -1;
	}
	return epoll_fd;
}

static doca_error_t serve(const struct comch_flags *cfg, struct doca_comm_channel_ep_t *ep,
			  uint64_t *answered)
{
	char msg[CC_MAX_MSG_SIZE];
	doca_event_channel_t send_fd, recv_fd;
	int send_epoll, recv_epoll;
	bool client_left = false;
	double idle_since = now_sec();
	doca_error_t result = doca_comm_channel_ep_get_event_channel(ep, &send_fd, &recv_fd);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot get the event channels: %s", doca_error_get_descr(result));
		return result;
	}
	send_epoll = epoll_on(send_fd);
	recv_epoll = epoll_on(recv_fd);
	if (send_epoll < 0 || recv_epoll < 0) {
		DOCA_LOG_ERR("cannot wait on the event channels: %s", strerror(errno));
		result = DOCA_ERROR_OPERATING_SYSTEM;
		goto close_epoll;
	}
	while (!stop && !(client_left && *answered >= (uint64_t)cfg->count)) {
		struct doca_comm_channel_addr_t *peer = NULL;
		size_t len = sizeof(msg);

		result = doca_comm_channel_ep_recvfrom(ep, msg, &len, DOCA_CC_MSG_FLAG_NONE, &peer);
		if (result == DOCA_ERROR_AGAIN) {
			if (now_sec() - idle_since > CC_IDLE_TIMEOUT_SEC) {
				DOCA_LOG_ERR("no message for %d s", CC_IDLE_TIMEOUT_SEC);
				result = DOCA_ERROR_TIME_OUT;
				break;
			}
			wait_channel(ep, recv_epoll, doca_comm_channel_ep_event_handle_arm_recv, 100);
			continue;
		}
		idle_since = now_sec();
		if (result == DOCA_ERROR_CONNECTION_RESET) {
			/* The client disconnected: its connection is ours to free. */
			DOCA_LOG_INFO("a client disconnected");
			result = doca_comm_channel_ep_disconnect(ep, peer);
			if (result != DOCA_SUCCESS) {
				DOCA_LOG_ERR("cannot disconnect: %s", doca_error_get_descr(result));
				break;
			}
			client_left = true;
			continue;
		}
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot receive: %s", doca_error_get_descr(result));
			break;
		}
		if (cfg->text[0] != '\0')
			result = send_answer(ep, send_epoll, cfg->text, strlen(cfg->text) + 1, peer);
		else
			result = send_answer(ep, send_epoll, msg, len, peer);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot answer: %s", doca_error_get_descr(result));
			break;
		}
		(*answered)++;
	}
	if (stop && result == DOCA_SUCCESS)
		result = DOCA_ERROR_AGAIN;
close_epoll:
	if (send_epoll >= 0)
		close(send_epoll);
	if (recv_epoll >= 0)
		close(recv_epoll);
	return result;
}

int main(int argc, char **argv)
{
	struct comch_flags cfg = {
		.pci_addr = "03:00.0",
		.rep_pci_addr = "b1:00.0",
		.server_name = "dpakit_cc",
		.count = 1,
		.min_count = 0,
	};
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_comm_channel_ep_t *ep = NULL;
	uint64_t answered = 0;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comm_channel_server", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (open_device(cfg.pci_addr, doca_comch_cap_server_is_supported, "a Comm Channel service (give the Arm-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	if (open_representor(dev, cfg.rep_pci_addr, &rep) != DOCA_SUCCESS)
		goto dev_close;
	result = doca_comm_channel_ep_create(&ep);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create an endpoint: %s", doca_error_get_descr(result));
		goto rep_close;
	}
	result = doca_comm_channel_ep_set_device(ep, dev);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_device_rep(ep, rep);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_max_msg_size(ep, CC_MAX_MSG_SIZE);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_send_queue_size(ep, CC_QUEUE_SIZE);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_recv_queue_size(ep, CC_QUEUE_SIZE);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure the endpoint: %s", doca_error_get_descr(result));
		goto ep_destroy;
	}
	result = doca_comm_channel_ep_listen(ep, cfg.server_name);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot listen as %s: %s", cfg.server_name, doca_error_get_descr(result));
		goto ep_destroy;
	}
	DOCA_LOG_INFO("listening as %s", cfg.server_name);

	result = serve(&cfg, ep, &answered);
	DOCA_LOG_INFO("%lu messages answered", (unsigned long)answered);
	if (result == DOCA_SUCCESS)
		exit_status = EXIT_SUCCESS;

ep_destroy:
	if (doca_comm_channel_ep_destroy(ep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
rep_close:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
