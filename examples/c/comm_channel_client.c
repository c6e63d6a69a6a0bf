/*
 * Legacy Comm Channel, client side: the partner of comm_channel_server.c, written like DOCA
 * 2.8's Comm Channel samples. It connects an endpoint through a host device to the service of a
 * name, waits for the handshake, then sends COUNT messages one at a time ("TEXT #n") and waits
 * for each answer on the event channels with poll. With an echoing service it checks every
 * answer byte for byte; at the end it checks the connection's statistics, prints one summary
 * line, disconnects and exits 0 only if everything matched. With no service it gives up at once.
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA up to 2.8 it runs on the host of a BlueField.
 *
 *   cargo xtask soft-sdk
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comm_channel_client.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comm_channel_client
 *   ./comm_channel_client [-p PCI_ADDR] [-s NAME] [-t TEXT] [-c COUNT]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <doca_comm_channel.h>
#include <doca_log.h>

DOCA_LOG_REGISTER(COMM_CHANNEL_CLIENT);

#include "comch_common.h"

#define CC_MAX_MSG_SIZE 4080
#define CC_CONNECT_TIMEOUT_SEC 5
#define CC_ANSWER_TIMEOUT_SEC 10

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
			       "host device to connect through (default b1:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "service-name", "<NAME>",
				       "service to connect to (default dpakit_cc)", DOCA_ARGP_TYPE_STRING,
				       server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("t", "text", "<TEXT>",
				       "text of the messages (default \"hello from the host\")",
				       DOCA_ARGP_TYPE_STRING, text_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>", "messages to send (default 1)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	return result;
}

/* Waits up to timeout_ms for fd after arming it with arm(ep). */
static void wait_channel(struct doca_comm_channel_ep_t *ep, doca_event_channel_t fd,
			 doca_error_t (*arm)(struct doca_comm_channel_ep_t *), int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (arm(ep) != DOCA_SUCCESS)
		return;
	(void)poll(&pfd, 1, timeout_ms);
}

/* One message and its answer; *echoed tells whether the answer was the message itself. */
static doca_error_t exchange(struct doca_comm_channel_ep_t *ep, struct doca_comm_channel_addr_t *peer,
			     doca_event_channel_t send_fd, doca_event_channel_t recv_fd,
			     const char *msg, size_t len, bool *echoed)
{
	char answer[CC_MAX_MSG_SIZE];
	struct doca_comm_channel_addr_t *from = NULL;
	size_t answer_len;
	double deadline = now_sec() + CC_ANSWER_TIMEOUT_SEC;
	doca_error_t result;

	while ((result = doca_comm_channel_ep_sendto(ep, msg, len, DOCA_CC_MSG_FLAG_NONE, peer)) ==
	       DOCA_ERROR_AGAIN) {
		if (stop || now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
		wait_channel(ep, send_fd, doca_comm_channel_ep_event_handle_arm_send, 100);
	}
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot send: %s", doca_error_get_descr(result));
		return result;
	}
	for (;;) {
		answer_len = sizeof(answer);
		result = doca_comm_channel_ep_recvfrom(ep, answer, &answer_len, DOCA_CC_MSG_FLAG_NONE, &from);
		if (result != DOCA_ERROR_AGAIN)
			break;
		if (stop || now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
		wait_channel(ep, recv_fd, doca_comm_channel_ep_event_handle_arm_recv, 100);
	}
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot receive the answer: %s", doca_error_get_descr(result));
		return result;
	}
	if (from != peer) {
		DOCA_LOG_ERR("an answer from a peer address the client never saw");
		return DOCA_ERROR_UNEXPECTED;
	}
	*echoed = answer_len == len && memcmp(answer, msg, len) == 0;
	return DOCA_SUCCESS;
}

/* Checks the connection's statistics after count exchanges. */
static bool stats_match(struct doca_comm_channel_addr_t *peer, uint64_t count, uint64_t sent_bytes)
{
	uint64_t send_messages = 0, send_bytes = 0, recv_messages = 0, in_flight = 1;

	if (doca_comm_channel_peer_addr_update_info(peer) != DOCA_SUCCESS ||
	    doca_comm_channel_peer_addr_get_send_messages(peer, &send_messages) != DOCA_SUCCESS ||
	    doca_comm_channel_peer_addr_get_send_bytes(peer, &send_bytes) != DOCA_SUCCESS ||
	    doca_comm_channel_peer_addr_get_recv_messages(peer, &recv_messages) != DOCA_SUCCESS ||
	    doca_comm_channel_peer_addr_get_send_in_flight_messages(peer, &in_flight) != DOCA_SUCCESS)
		return false;
	if (send_messages != count || send_bytes != sent_bytes || recv_messages != count || in_flight != 0) {
		DOCA_LOG_ERR("statistics: sent %" PRIu64 " (%" PRIu64 " bytes), received %" PRIu64
			     ", in flight %" PRIu64 "; expected %" PRIu64 " each way, %" PRIu64 " bytes",
			     send_messages, send_bytes, recv_messages, in_flight, count, sent_bytes);
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct comch_flags cfg = {
		.pci_addr = "b1:00.0",
		.server_name = "dpakit_cc",
		.text = "hello from the host",
		.count = 1,
		.min_count = 1,
	};
	struct doca_dev *dev = NULL;
	struct doca_comm_channel_ep_t *ep = NULL;
	struct doca_comm_channel_addr_t *peer = NULL;
	doca_event_channel_t send_fd, recv_fd;
	uint64_t echoed = 0, answered = 0, sent_bytes = 0;
	double deadline;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comm_channel_client", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (open_device(cfg.pci_addr, doca_comch_cap_client_is_supported, "a Comm Channel client (give the host-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	result = doca_comm_channel_ep_create(&ep);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create an endpoint: %s", doca_error_get_descr(result));
		goto dev_close;
	}
	result = doca_comm_channel_ep_set_device(ep, dev);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_max_msg_size(ep, CC_MAX_MSG_SIZE);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure the endpoint: %s", doca_error_get_descr(result));
		goto ep_destroy;
	}
	/* The service may not listen yet: connect fails at once then, so try again for a while. */
	deadline = now_sec() + CC_CONNECT_TIMEOUT_SEC;
	while ((result = doca_comm_channel_ep_connect(ep, cfg.server_name, &peer)) == DOCA_ERROR_NOT_CONNECTED &&
	       !stop && now_sec() < deadline)
		usleep(10000);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot connect to %s: %s", cfg.server_name, doca_error_get_descr(result));
		goto ep_destroy;
	}
	/* The handshake completes in the background; update_info says when. */
	deadline = now_sec() + CC_CONNECT_TIMEOUT_SEC;
	while ((result = doca_comm_channel_peer_addr_update_info(peer)) == DOCA_ERROR_CONNECTION_INPROGRESS) {
		if (stop || now_sec() > deadline)
			break;
		usleep(1000);
	}
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("the connection to %s did not complete: %s", cfg.server_name,
			     doca_error_get_descr(result));
		goto ep_destroy;
	}
	result = doca_comm_channel_ep_get_event_channel(ep, &send_fd, &recv_fd);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot get the event channels: %s", doca_error_get_descr(result));
		goto ep_destroy;
	}

	for (int i = 0; i < cfg.count && !stop; i++) {
		char msg[CC_MAX_MSG_SIZE];
		int len = snprintf(msg, sizeof(msg), "%s #%d", cfg.text, i);
		bool same = false;

		if (len < 0 || (size_t)len >= sizeof(msg))
			len = sizeof(msg) - 1;
		result = exchange(ep, peer, send_fd, recv_fd, msg, (size_t)len + 1, &same);
		if (result != DOCA_SUCCESS)
			break;
		answered++;
		sent_bytes += (uint64_t)len + 1;
		echoed += same;
	}
	if (result == DOCA_SUCCESS && answered == (uint64_t)cfg.count && stats_match(peer, answered, sent_bytes)) {
		printf("comm_channel_client: %" PRIu64 " messages answered, %" PRIu64 " echoed byte for byte\n",
		       answered, echoed);
		exit_status = EXIT_SUCCESS;
	}
	if (doca_comm_channel_ep_disconnect(ep, peer) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;

ep_destroy:
	if (doca_comm_channel_ep_destroy(ep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
